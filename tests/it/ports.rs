//! Free loopback ports for listeners a test's config names (gatebot's webhooks, the
//! PostgreSQL test cluster).
//!
//! A port the kernel hands out for `127.0.0.1:0` comes from the ephemeral range, the same
//! range every outgoing connection's local port is taken from. Between a test picking such
//! a port and the daemon binding it, any connection the suite opens (hundreds a second with
//! the store on PostgreSQL) may take it as its own end, and the daemon's listener then
//! fails or a webhook reaches nobody. So ports are taken below that range, counting up from
//! a per-process start, each checked by binding it once.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU32, Ordering};

/// How many ports below the ephemeral range the tests take turns with.
const SPAN: u32 = 12_000;

/// A port of loopback no one listens on now, outside the ephemeral range.
pub fn free_port() -> SocketAddr {
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let Some(low) = ephemeral_low().filter(|low| *low > SPAN + 1024) else {
        return any_port();
    };
    let base = low - SPAN;
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7919) % SPAN,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..SPAN {
        let port = base + NEXT.fetch_add(1, Ordering::SeqCst) % SPAN;
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port as u16)) {
            return listener.local_addr().unwrap();
        }
    }
    any_port()
}

/// The first port of the kernel's ephemeral range (Linux), if it can be read.
fn ephemeral_low() -> Option<u32> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok()
}

/// Any free port the kernel picks (where its ephemeral range is unknown).
fn any_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}
