//! The keyword classifier: an intent from a table of patterns, with no model and no
//! network, so it always answers (and answers in microseconds; see `cargo bench --
//! inbox`).
//!
//! Rules are tried in order and the first that matches wins, so the specific ones
//! (closing or listing to-dos) come before the general ones (any to-do), and the ones
//! that name an action (a reminder, a code change, research, email) come before the
//! question rule, which only looks at the form of the sentence. Text matching nothing
//! is `other`.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::Intent;

/// The rules: an intent and the patterns (case-insensitive, on word boundaries) that
/// select it.
pub const RULES: &[(Intent, &[&str])] = &[
    (
        Intent::TodoComplete,
        &[
            r"\b(mark|tick|check)\b.{0,60}\b(done|complete|completed|finished|off)\b",
            r"\b(done|finished|completed)\s+(with\b.{0,40}\s)?(the\s+|my\s+)?(todo|to-do|task)\b",
            r"\b(close|complete|finish)\s+(the\s+|my\s+)?(todo|to-do)\b",
            r"\bcross\b.{0,40}\boff\b",
        ],
    ),
    (
        Intent::TodoCheck,
        &[
            r"\b(what'?s|what is|anything|show|list|check|see|review)\b.{0,30}\b(on\s+)?(my\s+)?(todos|to-dos|todo list|to-do list|todo|to-do|open tasks)\b",
            r"\b(my\s+)?(todos|to-dos|todo list|to-do list)\s*\?",
        ],
    ),
    (
        Intent::Todo,
        &[
            r"\b(todo|to-do|to do list|todo list|to-do list)\b",
            r"\badd\b.{0,60}\b(to\s+)?(my\s+)?(list|tasks)\b",
            r"^\s*(todo|to-do)\s*:",
        ],
    ),
    (
        Intent::Reminder,
        &[
            r"\bremind\s+me\b",
            r"\breminder\b",
            r"\b(calendar|meeting|appointment|schedule|reschedule)\b",
            r"\b(book|set up|arrange)\b.{0,40}\b(call|meeting|slot)\b",
        ],
    ),
    (
        Intent::CodeChange,
        &[
            r"\b(fix|refactor|implement|rewrite|migrate|deploy|merge|rebase|patch|debug)\b",
            r"\b(bug|pull request|pr|commit|branch|repo|repository|codebase|function|method|endpoint|unit tests?|test suite|compile|build|lint|ci)\b",
            r"\b[\w\-/]+\.(rs|py|ts|tsx|js|go|java|rb|c|cpp|h|toml|yml|yaml|json|sql)\b",
            r"\b(add|write|remove|rename|update)\b.{0,40}\b(tests?|code|module|class|crate|package|dependency|feature flag)\b",
            // An identifier in snake_case names code.
            r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b",
        ],
    ),
    (
        Intent::Research,
        &[
            r"\b(research|investigate|compare|comparison|analy[sz]e|analysis|survey|benchmark)\b",
            r"\b(find out|look into|look up|dig into|read up on)\b",
            r"\b(competitors?|market|pricing|alternatives|sources|studies|papers|articles)\b",
        ],
    ),
    (
        Intent::Organize,
        &[
            r"\b(e-?mails?|mail|inbox|newsletter|unsubscribe|reply to|forward)\b",
            r"\b(organi[sz]e|sort|tidy|clean up|clean-up|archive|file away|label|folder)\b",
        ],
    ),
    (
        Intent::Question,
        &[
            r"\?\s*$",
            r"^\s*(what|who|whom|whose|when|where|why|how|which|is|are|was|were|do|does|did|can|could|should|would|will)\b",
        ],
    ),
];

struct Compiled {
    /// One set per rule, in order.
    rules: Vec<(Intent, RegexSet)>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| Compiled {
    rules: RULES
        .iter()
        .map(|(intent, patterns)| {
            let patterns: Vec<String> = patterns.iter().map(|p| format!("(?i){p}")).collect();
            (
                *intent,
                RegexSet::new(&patterns).expect("the keyword table compiles"),
            )
        })
        .collect(),
});

/// The intent of `text` by the table: the first rule with a matching pattern.
#[must_use]
pub fn intent(text: &str) -> Intent {
    COMPILED
        .rules
        .iter()
        .find(|(_, set)| set.is_match(text))
        .map_or(Intent::Other, |(intent, _)| *intent)
}

/// Words that make a code change large: it needs specifics before it runs.
static LARGE_SCOPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(refactor|rewrite|migrate|redesign|overhaul|rearchitect|everything|whole|entire|all (the )?(code|files|modules|services)|across the (code|repo))\b",
    )
    .expect("compiles")
});

/// Signs that a code change names what to change: a path or file, an identifier, an
/// issue or PR number, quoted code, an error message.
static SPECIFICS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?x)
        [\w.\-]+/[\w.\-/]+            # a path
      | \b[\w\-]+\.[a-z]{1,5}\b       # a file name
      | `[^`]+`                       # quoted code
      | \#\d+                         # an issue or pull request
      | \b[a-z]+_[a-z0-9_]+\b         # snake_case
      | \b[a-z]+[A-Z][A-Za-z0-9]*\b   # camelCase
      | \b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b  # CamelCase
      | \b(error|panic|exception|stack trace|line \d+)\b
    ",
    )
    .expect("compiles")
});

/// A code change that should not start without specifics: large in scope, or too
/// short to say what, and naming nothing concrete.
#[must_use]
pub fn vague_code_change(text: &str) -> bool {
    if SPECIFICS.is_match(text) {
        return false;
    }
    LARGE_SCOPE.is_match(text) || text.split_whitespace().count() < 5
}

/// Text from which no task can be made out: too little of it is words.
#[must_use]
pub fn incomprehensible(text: &str) -> bool {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 2)
        .collect();
    let letters: usize = words.iter().map(|w| w.chars().count()).sum();
    let distinct: std::collections::BTreeSet<char> = text
        .chars()
        .filter(|c| c.is_alphabetic())
        .flat_map(char::to_lowercase)
        .collect();
    words.is_empty() || letters < 3 || distinct.len() < 3
}

#[cfg(test)]
mod tests {
    use super::*;
    use Intent::*;

    #[test]
    fn the_keyword_table_picks_the_intent_of_common_tasks() {
        let cases: &[(&str, Intent)] = &[
            (
                "research what our three competitors charge for the Pro tier",
                Research,
            ),
            ("compare Postgres and SQLite for our use case", Research),
            ("find out who maintains the billing service", Research),
            ("fix the flaky test in src/store/chat.rs", CodeChange),
            ("refactor the payment module", CodeChange),
            ("open a pull request that bumps tokio", CodeChange),
            ("update parse_config to accept durations", CodeChange),
            ("reply to Ann's email about the invoice", Organize),
            ("unsubscribe me from the vendor newsletters", Organize),
            ("tidy up my downloads folder", Organize),
            ("remind me to call the bank at 5pm", Reminder),
            ("schedule a meeting with Bo next Tuesday", Reminder),
            ("put the dentist appointment in my calendar", Reminder),
            ("add buy milk to my todo list", Todo),
            ("todo: renew the passport", Todo),
            ("mark the passport todo as done", TodoComplete),
            ("done with the milk todo", TodoComplete),
            ("cross the passport off", TodoComplete),
            ("what's on my todo list", TodoCheck),
            ("show my todos", TodoCheck),
            ("my todos?", TodoCheck),
            ("what time is it in Tokyo?", Question),
            ("how many seats do we have left", Question),
            ("is the VPN down", Question),
            ("say hello to the team", Other),
            ("", Other),
        ];
        for (text, want) in cases {
            assert_eq!(intent(text), *want, "{text:?}");
        }
    }

    #[test]
    fn a_code_change_is_vague_without_specifics() {
        let cases: &[(&str, bool)] = &[
            ("refactor everything", true),
            ("rewrite the backend", true),
            ("fix the bug", true),
            ("migrate the whole codebase to async", true),
            ("fix the panic in the digest view", false),
            ("refactor src/chat/delivery.rs to one call per pass", false),
            ("rename parse_config to load_config", false),
            ("fix #412", false),
            ("fix the off-by-one in the retry backoff calculation", false),
        ];
        for (text, want) in cases {
            assert_eq!(vague_code_change(text), *want, "{text:?}");
        }
    }

    #[test]
    fn gibberish_is_incomprehensible_and_short_tasks_are_not() {
        for text in ["???", "hm", "k", "!!!!1!", "aaaaaaaa", "🤔🤔", "x y z"] {
            assert!(incomprehensible(text), "{text:?}");
        }
        for text in ["call Bo", "fix #412", "buy milk", "what time is it?"] {
            assert!(!incomprehensible(text), "{text:?}");
        }
    }
}
