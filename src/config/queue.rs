//! `[store]`, `[queue]` and `[log]`: where gatebot keeps its data, how agents and
//! owners reach it, and what it logs.

use super::file::{FileLog, FileQueue, FileStore};
use super::resolve::Resolve;
use super::{ConfigError, LogConfig, QueueConfig, StoreConfig};

impl Resolve<'_> {
    pub(super) fn store(&self, store: FileStore) -> StoreConfig {
        StoreConfig {
            path: self.anchor(&store.path),
        }
    }

    /// `[queue]`; its checks only record, so the value is always there.
    pub(super) fn queue(&self, queue: FileQueue, errors: &mut Vec<ConfigError>) -> QueueConfig {
        if queue.max_body_bytes < 1024 {
            errors.push(self.error("queue", "max_body_bytes", "must be at least 1024"));
        }
        if let Some(listen) = &queue.listen {
            if listen.parse::<std::net::SocketAddr>().is_err() {
                errors.push(self.error(
                    "queue",
                    "listen",
                    format!("`{listen}` is not an address like 127.0.0.1:8377"),
                ));
            }
        }
        if queue.metrics && queue.listen.is_none() {
            errors.push(self.error(
                "queue",
                "metrics",
                "metrics are served on the TCP listener: set `queue.listen` too (the control socket always serves /metrics)",
            ));
        }
        if queue.socket == queue.control_socket {
            errors.push(self.error(
                "queue",
                "control_socket",
                "must differ from `queue.socket`: agents must not reach the owners' socket",
            ));
        }
        QueueConfig {
            socket: self.anchor(&queue.socket),
            control_socket: self.anchor(&queue.control_socket),
            listen: queue.listen,
            max_body_bytes: queue.max_body_bytes,
            max_wait: queue.max_wait,
            metrics: queue.metrics,
        }
    }

    /// `[log]`; a bad filter is recorded, and the value is always there.
    pub(super) fn log(&self, log: FileLog, errors: &mut Vec<ConfigError>) -> LogConfig {
        if tracing_subscriber::EnvFilter::try_new(&log.level).is_err() {
            errors.push(self.error(
                "log",
                "level",
                format!(
                    "`{}` is not a log filter like info or gatebot=debug",
                    log.level
                ),
            ));
        }
        LogConfig {
            format: log.format,
            level: log.level,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;

    #[test]
    fn same_socket_twice_is_an_error() {
        let e = parse("[queue]\nsocket = \"a.sock\"\ncontrol_socket = \"a.sock\"\n").unwrap_err();
        assert_eq!(e.key, "queue.control_socket");
    }
}
