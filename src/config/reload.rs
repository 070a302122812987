//! Reloading (SIGHUP): which keys a running daemon can take up, and which it read
//! once at start.
//!
//! Agents, tiers, lists, the policy, chat approvers, chats and channels and the digest
//! threshold apply at once: they are read from the config in force at each use (chat
//! delivery follows changed chats and channels as well), and so are the connection
//! timeouts, and agents' limits (`[limits]`). Sockets, the database (its path, size
//! cap and reserve), the TCP listener and its connection cap, logging
//! and a chat platform's connection (its tokens, API URL, mode,
//! or the platform being turned on or off) are set up at start: a new value there
//! takes effect only after a restart, so the config in force keeps the old one, and
//! the caller names each such key in a warning. Which of a platform's keys those are,
//! the platform's settings say ([`crate::settings::PlatformSettings::keep_started`]).

use std::sync::Arc;

use super::Config;
use crate::settings::AnySettings;

impl Config {
    /// `new`, as far as a running daemon can apply it: every key that needs a restart
    /// keeps its value from `self`. Also returns those keys (`queue.socket`,
    /// `telegram.token`, `slack` for the table turned on or off, …), in file order
    /// (a platform turned on last).
    #[must_use]
    pub fn reloaded(&self, mut new: Config) -> (Config, Vec<&'static str>) {
        let mut restart = Vec::new();
        let mut keep = |key: &'static str, changed: bool| {
            if changed {
                restart.push(key);
            }
        };
        keep("store.path", new.store.path != self.store.path);
        keep("store.max_size", new.store.max_size != self.store.max_size);
        keep("store.reserve", new.store.reserve != self.store.reserve);
        keep(
            "store.url",
            new.store.postgres.as_ref().map(|p| &p.url)
                != self.store.postgres.as_ref().map(|p| &p.url),
        );
        keep(
            "store.password",
            new.store.postgres.as_ref().map(|p| &p.password)
                != self.store.postgres.as_ref().map(|p| &p.password),
        );
        keep("store.node", new.store.node != self.store.node);
        keep("queue.socket", new.queue.socket != self.queue.socket);
        keep(
            "queue.control_socket",
            new.queue.control_socket != self.queue.control_socket,
        );
        keep("queue.listen", new.queue.listen != self.queue.listen);
        keep("queue.metrics", new.queue.metrics != self.queue.metrics);
        keep(
            "queue.max_connections",
            new.queue.max_connections != self.queue.max_connections,
        );
        keep(
            "dashboard.listen",
            new.dashboard.as_ref().map(|d| d.listen) != self.dashboard.as_ref().map(|d| d.listen),
        );
        keep("log.format", new.log.format != self.log.format);
        keep("log.level", new.log.level != self.log.level);
        new.store = self.store.clone();
        new.queue.socket = self.queue.socket.clone();
        new.queue.control_socket = self.queue.control_socket.clone();
        new.queue.listen = self.queue.listen.clone();
        new.queue.metrics = self.queue.metrics;
        new.queue.max_connections = self.queue.max_connections;
        new.log = self.log.clone();
        // The listener stays as started (or absent); the rest applies at once.
        match (&mut new.dashboard, &self.dashboard) {
            (Some(n), Some(old)) => n.listen = old.listen,
            (n, old) => n.clone_from(old),
        }

        new.platforms = self.platforms_reloaded(&new, &mut restart);
        (new, restart)
    }

    /// The chat platforms as a running daemon can take `new`'s up: each keeps what it
    /// was started with ([`PlatformSettings::keep_started`]); one turned on or off
    /// stays as it runs, its key named in `restart`, until a restart.
    ///
    /// [`PlatformSettings::keep_started`]: crate::settings::PlatformSettings::keep_started
    fn platforms_reloaded(
        &self,
        new: &Config,
        restart: &mut Vec<&'static str>,
    ) -> Vec<Arc<dyn AnySettings>> {
        let find = |c: &Config, key| c.platforms.iter().find(|p| p.key() == key).cloned();
        let mut platforms = Vec::new();
        for old in &self.platforms {
            match find(new, old.key()) {
                Some(p) => platforms.push(old.reloaded(p.as_ref(), restart)),
                // Turned off: it runs with its old table until a restart.
                None => {
                    restart.push(old.key());
                    platforms.push(old.clone());
                }
            }
        }
        // Turned on: it starts at the next restart.
        for p in &new.platforms {
            if find(self, p.key()).is_none() {
                restart.push(p.key());
            }
        }
        platforms
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;
    use crate::slack::SlackConfig;
    use crate::telegram::TelegramConfig;

    const BASE: &str = "[telegram]\ntoken = \"1:A\"\nchats = [1]\napprovers = [1]\n\
                        [slack]\nbot_token = \"xoxb-1\"\napp_token = \"xapp-1\"\n\
                        channels = [\"C1\"]\napprovers = [\"U1\"]\n";

    #[test]
    fn keys_read_at_start_keep_their_value_and_are_named() {
        let old = parse(BASE).unwrap();
        let changed = format!(
            "[store]\npath = \"other.db\"\n[queue]\nsocket = \"a.sock\"\n\
             control_socket = \"b.sock\"\nlisten = \"127.0.0.1:9\"\nmax_connections = 9\n\
             idle_timeout = \"5s\"\n[log]\nlevel = \"debug\"\n{}",
            BASE.replace("1:A", "2:B")
                .replace("xapp-1", "xapp-2")
                .replace("chats = [1]", "chats = [1, 2]")
                .replace("channels = [\"C1\"]", "channels = [\"C1\", \"C2\"]")
                .replace("approvers = [1]", "approvers = [1, 3]")
        );
        let (new, restart) = old.reloaded(parse(&changed).unwrap());
        assert_eq!(
            restart,
            [
                "store.path",
                "queue.socket",
                "queue.control_socket",
                "queue.listen",
                "queue.max_connections",
                "log.level",
                "telegram.token",
                "slack.app_token"
            ]
        );
        // What needs a restart stays as it runs …
        assert_eq!(new.store.path, old.store.path);
        assert_eq!(new.queue.socket, old.queue.socket);
        assert_eq!(new.queue.listen, None);
        assert_eq!(new.queue.max_connections, None);
        assert_eq!(new.queue.idle_timeout, std::time::Duration::from_secs(5));
        assert_eq!(new.log.level, "info");
        let t = new.platform::<TelegramConfig>().unwrap();
        let s = new.platform::<SlackConfig>().unwrap();
        assert_eq!(t.token.expose(), "1:A");
        assert_eq!(s.app_token.as_ref().unwrap().expose(), "xapp-1");
        // … and the rest applies.
        assert_eq!(t.chat.destinations, ["1", "2"]);
        assert!(t.chat.approvers.contains("3"));
        assert_eq!(s.chat.destinations, ["C1", "C2"]);
    }

    #[test]
    fn a_platform_turned_on_or_off_waits_for_a_restart() {
        let old = parse(BASE).unwrap();
        let without_slack = &BASE[..BASE.find("[slack]").unwrap()];
        let (new, restart) = old.reloaded(parse(without_slack).unwrap());
        assert_eq!(restart, ["slack"]);
        assert!(
            new.platform::<SlackConfig>().is_some(),
            "Slack keeps running with its old table"
        );
        let (new, restart) = parse(without_slack).unwrap().reloaded(old.clone());
        assert_eq!(restart, ["slack"]);
        assert!(new.platform::<SlackConfig>().is_none());
        // Nothing changed, nothing to say.
        assert!(old.reloaded(parse(BASE).unwrap()).1.is_empty());
    }
}
