//! Golden files: the whole text of a representative card of every kind, as each
//! renderer draws it, kept in `tests/golden/<renderer>/<kind>-<state>.txt`, so a
//! change of wording or a glitch ("in 86399s", a stray `*`) shows in review as a diff.
//!
//! A renderer's test calls [`check`] with its name and how it shows a card; it fails on
//! any difference and names the files. `GATEBOT_BLESS=1 cargo test golden` writes
//! the files anew (then read the diff before committing it).

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::chat::card::Card;

/// The instant golden cards are drawn at: 2026-11-25 09:00 UTC.
pub const NOW: i64 = 1_795_597_200_000;

/// Every kind's golden cards, drawn at [`NOW`]: `(file name, card)`.
#[must_use]
pub fn golden_cards() -> Vec<(String, Card)> {
    crate::time::fixed_now(NOW, crate::chat::conversation::golden_cards)
}

/// Draws every [`golden_cards`] entry with `shown` (the renderer's whole text of a card)
/// and compares each with its golden file; with `GATEBOT_BLESS` set, writes them
/// instead. Panics naming every file that differs.
pub fn check(renderer: &str, shown: fn(&Card) -> String) {
    let drawn: Vec<(String, String)> = golden_cards()
        .into_iter()
        .map(|(name, card)| (name, shown(&card)))
        .collect();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(renderer);
    let bless = std::env::var_os("GATEBOT_BLESS").is_some();
    let mut differ = String::new();
    for (name, text) in &drawn {
        let path = dir.join(format!("{name}.txt"));
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, text).unwrap();
            continue;
        }
        let kept = std::fs::read_to_string(&path).unwrap_or_default();
        if kept != *text {
            let _ = write!(
                differ,
                "\n== {} differs; drawn now:\n{text}\n",
                path.display()
            );
        }
    }
    // A golden file no card draws any more is stale.
    if !bless {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".txt")
                .to_string();
            if !drawn.iter().any(|(n, _)| *n == name) {
                let _ = write!(
                    differ,
                    "\n== {} is drawn by no card",
                    entry.path().display()
                );
            }
        }
    }
    assert!(
        differ.is_empty(),
        "golden cards differ (GATEBOT_BLESS=1 cargo test golden writes them; review the diff):{differ}"
    );
}
