//! Standard output for the commands' results.
//!
//! `println!` panics when standard output is gone, so `gatebot audit | head -1`
//! ended with a panic message and exit code 101 once `head` had its line. Here a
//! closed pipe (`EPIPE`) is the reader saying it has enough: later lines are dropped,
//! listings stop early ([`closed`]), and the command exits with the code its result
//! means. Any other write error (a full disk behind `> file`) is reported on stderr
//! and makes the command exit 2 ([`failed`]), since its output is incomplete.

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);
static FAILED: AtomicBool = AtomicBool::new(false);

/// Writes one line to standard output (see the module docs); use [`outln!`]. Hidden
/// characters in it (a `\u202e` in an agent's summary, a no-break space in a command)
/// are written out by [`crate::names::visible`]; in `--json` output that escape is
/// JSON's own, so the value decodes unchanged.
pub(crate) fn line(args: std::fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let text = args.to_string();
    let text = crate::names::visible(&text);
    let mut out = std::io::stdout().lock();
    let written = out
        .write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    if let Err(e) = written {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != ErrorKind::BrokenPipe {
            FAILED.store(true, Ordering::Relaxed);
            eprintln!("error: cannot write to standard output: {e}");
        }
    }
}

/// Whether standard output is gone: nothing more needs printing.
pub(crate) fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// Whether writing failed for a reason other than a reader that stopped reading.
pub(crate) fn failed() -> bool {
    FAILED.load(Ordering::Relaxed)
}

/// `println!` that survives a closed pipe.
macro_rules! outln {
    () => {
        $crate::client::cli::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::client::cli::out::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;
