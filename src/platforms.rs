//! The chat platforms gatebot can run: the one list that names their adapters.
//!
//! A platform describes itself through its settings ([`PlatformSettings`]: its key, its
//! chat settings, what a reload keeps, its `check-config` line), so `config`, `gatebot
//! check-config` and the daemon iterate what is on without naming it. What stays
//! per platform is its table in `config::file::FileConfig` (a field and a line) and its
//! line here, the one place that turns its settings into a running adapter.

use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::approval::PlatformId;
use crate::config::Config;
use crate::engine::Engine;
use crate::settings::PlatformSettings;

/// The platforms `config` turns on, ready to run until `stop`, in `config`'s order.
#[must_use]
pub fn configured(
    config: &Config,
    engine: &Arc<Engine>,
    stop: &CancellationToken,
) -> Vec<(PlatformId, BoxFuture<'static, ()>)> {
    let start = Start {
        config,
        engine,
        stop,
    };
    // A new platform adds its adapter's `run` here.
    [
        start.on(crate::telegram::run),
        start.on(crate::slack::run),
        start.on(crate::email::run),
        start.on(crate::sms::run),
        start.on(crate::whatsapp::run),
        start.on(crate::discord::run),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// What starting a platform takes.
struct Start<'a> {
    config: &'a Config,
    engine: &'a Arc<Engine>,
    stop: &'a CancellationToken,
}

impl Start<'_> {
    /// The adapter `run`, given its platform's settings, when `bot.toml` turns it on.
    fn on<P, F>(
        &self,
        run: impl FnOnce(Arc<Engine>, P, CancellationToken) -> F,
    ) -> Option<(PlatformId, BoxFuture<'static, ()>)>
    where
        P: PlatformSettings,
        F: Future<Output = ()> + Send + 'static,
    {
        let settings = self.config.platform::<P>()?.clone();
        let running = run(self.engine.clone(), settings, self.stop.clone());
        Some((PlatformId::new(P::KEY), Box::pin(running)))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every platform table `bot.toml` can turn on (all of `FileConfig`'s, in this
    /// config) has its adapter in [`configured`], in the same order.
    #[tokio::test]
    async fn every_platform_that_is_on_is_started() {
        let raw =
            "[telegram]\ntoken = \"1:A\"\napprovers = [1]\napi_url = \"http://127.0.0.1:9\"\n\
                   [slack]\nbot_token = \"xoxb-1\"\napp_token = \"xapp-1\"\n\
                   channels = [\"C1\"]\napprovers = [\"U1\"]\napi_url = \"http://127.0.0.1:9\"\n\
                   [email]\nsmtp_host = \"127.0.0.1\"\nsecurity = \"none\"\nfrom = \"g@example.com\"\n\
                   [sms]\naccount_sid = \"AC00000000000000000000000000000001\"\n\
                   auth_token = \"t\"\nfrom = \"+15005550006\"\n\
                   approvers = [\"+15551234567\"]\napi_url = \"http://127.0.0.1:9\"\n\
                   [whatsapp]\nphone_number_id = \"106540352242922\"\naccess_token = \"t\"\n\
                   approvers = [\"+15551234567\"]\napi_url = \"http://127.0.0.1:9\"\n\
                   [discord]\nbot_token = \"d\"\nchannels = [\"2\"]\napprovers = [\"1\"]\n\
                   api_url = \"http://127.0.0.1:9\"\ngateway_url = \"ws://127.0.0.1:9\"\n";
        let dir = tempfile::tempdir().unwrap();
        let config = Config::parse(raw, &dir.path().join("bot.toml")).unwrap();
        let on: Vec<&str> = config.platforms.iter().map(|p| p.key()).collect();
        assert_eq!(
            on,
            ["telegram", "slack", "email", "sms", "whatsapp", "discord"]
        );
        let engine = Engine::open(config.clone()).await.unwrap();
        let stop = CancellationToken::new();
        let started: Vec<PlatformId> = configured(&config, &engine, &stop)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(
            started,
            [
                crate::telegram::PLATFORM,
                crate::slack::PLATFORM,
                crate::email::platform::PLATFORM,
                crate::sms::PLATFORM,
                crate::whatsapp::PLATFORM,
                crate::discord::PLATFORM
            ]
        );
        let none = Config::parse("", Path::new("/nonexistent/bot.toml")).unwrap();
        assert!(configured(&none, &engine, &stop).is_empty());
    }
}
