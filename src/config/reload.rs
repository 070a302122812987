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
//! the caller names each such key in a warning.

use super::Config;

impl Config {
    /// `new`, as far as a running daemon can apply it: every key that needs a restart
    /// keeps its value from `self`. Also returns those keys (`queue.socket`,
    /// `telegram.token`, `slack` for the table turned on or off, …), in file order.
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
        keep("log.format", new.log.format != self.log.format);
        keep("log.level", new.log.level != self.log.level);
        new.store = self.store.clone();
        new.queue.socket = self.queue.socket.clone();
        new.queue.control_socket = self.queue.control_socket.clone();
        new.queue.listen = self.queue.listen.clone();
        new.queue.metrics = self.queue.metrics;
        new.queue.max_connections = self.queue.max_connections;
        new.log = self.log.clone();

        match (&self.telegram, &mut new.telegram) {
            (Some(old), Some(t)) => {
                keep("telegram.token", t.token != old.token);
                keep("telegram.api_url", t.api_url != old.api_url);
                t.token = old.token.clone();
                t.api_url = old.api_url.clone();
            }
            (None, None) => {}
            // Turned on or off: the adapter runs (or not) until a restart.
            (old, t) => {
                keep("telegram", true);
                t.clone_from(old);
            }
        }
        match (&self.slack, &mut new.slack) {
            (Some(old), Some(s)) => {
                keep("slack.bot_token", s.bot_token != old.bot_token);
                keep("slack.app_token", s.app_token != old.app_token);
                keep(
                    "slack.signing_secret",
                    s.signing_secret != old.signing_secret,
                );
                keep("slack.mode", s.mode != old.mode);
                keep("slack.events_listen", s.events_listen != old.events_listen);
                keep("slack.api_url", s.api_url != old.api_url);
                s.bot_token = old.bot_token.clone();
                s.app_token = old.app_token.clone();
                s.signing_secret = old.signing_secret.clone();
                s.mode = old.mode;
                s.events_listen = old.events_listen.clone();
                s.api_url = old.api_url.clone();
            }
            (None, None) => {}
            (old, s) => {
                keep("slack", true);
                s.clone_from(old);
            }
        }
        (new, restart)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;

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
        let (t, s) = (new.telegram.unwrap(), new.slack.unwrap());
        assert_eq!(t.token.expose(), "1:A");
        assert_eq!(s.app_token.unwrap().expose(), "xapp-1");
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
            new.slack.is_some(),
            "Slack keeps running with its old table"
        );
        let (new, restart) = parse(without_slack).unwrap().reloaded(old.clone());
        assert_eq!(restart, ["slack"]);
        assert!(new.slack.is_none());
        // Nothing changed, nothing to say.
        assert!(old.reloaded(parse(BASE).unwrap()).1.is_empty());
    }
}
