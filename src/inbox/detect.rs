//! What an agent's final output says, beyond its exit code (the seed's executor
//! checks): a run that "succeeded" while reporting an authentication error failed; a
//! run that ends by asking the owner several questions needs input, not a tick.
//!
//! 1. [`failure`]: the configured patterns (`[inbox] failure_patterns`) over the last
//!    [`FAILURE_TAIL`] characters.
//! 2. [`questions`]: [`PENDING_QUESTIONS`] or more questions in the last
//!    [`QUESTION_TAIL`] characters.
//!
//! The daemon applies both when a task is completed (`POST /v1/tasks/{id}/complete`),
//! so every agent is judged alike, with or without `gatebot worker`.

use regex::RegexSet;

use super::{cut, tail, MAX_QUESTIONS, MAX_QUESTION_CHARS};

/// How much of the end of the output the failure patterns read, in characters.
pub const FAILURE_TAIL: usize = 500;
/// How much of the end of the output is read for questions, in characters.
pub const QUESTION_TAIL: usize = 2000;
/// How many questions mean the agent is waiting for the owner.
pub const PENDING_QUESTIONS: usize = 3;

/// The seed's failure patterns (authentication errors, permission denied, "No tokens
/// found", and its Japanese "failed" / "authentication error"), the default of
/// `[inbox] failure_patterns`.
pub const DEFAULT_FAILURE_PATTERNS: &[&str] = &[
    r"(?i)\bauthentication (error|failed|failure)\b",
    r"(?i)\b(invalid|expired) (api key|token|credentials)\b",
    r"(?i)\bpermission denied\b",
    r"(?i)\bno tokens found\b",
    "失敗しました",
    "認証エラー",
];

/// How a completed run is to be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Completed,
    /// The output reports a failure: the line that says so.
    Failed(String),
    /// The output ends asking the owner these questions.
    NeedsInput(Vec<String>),
}

/// Reads a run's final output (see the module docs); failure comes first.
#[must_use]
pub fn verdict(output: &str, patterns: &RegexSet) -> Verdict {
    if let Some(line) = failure(output, patterns) {
        return Verdict::Failed(line);
    }
    let qs = questions(output);
    if qs.len() >= PENDING_QUESTIONS {
        return Verdict::NeedsInput(qs);
    }
    Verdict::Completed
}

/// The line of the output's tail that matches a failure pattern, if one does.
#[must_use]
pub fn failure(output: &str, patterns: &RegexSet) -> Option<String> {
    let end = tail(output, FAILURE_TAIL);
    if !patterns.is_match(&end) {
        return None;
    }
    let line = end
        .lines()
        .rev()
        .find(|l| patterns.is_match(l))
        .unwrap_or(&end);
    Some(cut(line.trim(), 300))
}

/// The questions at the end of the output, in order, without repeats.
#[must_use]
pub fn questions(output: &str) -> Vec<String> {
    let end = tail(output, QUESTION_TAIL);
    let mut found: Vec<String> = Vec::new();
    let mut sentence = String::new();
    for c in end.chars() {
        match c {
            '?' | '？' => {
                sentence.push(c);
                let q = sentence
                    .trim()
                    .trim_start_matches(|c: char| {
                        c == '-'
                            || c == '*'
                            || c == '•'
                            || c == '…'
                            || c.is_ascii_digit()
                            || c == ')'
                    })
                    .trim_start_matches(['.', ' '])
                    .trim()
                    .to_string();
                let letters = q.chars().filter(|c| c.is_alphabetic()).count();
                if letters >= 3 && !found.contains(&q) {
                    found.push(cut(&q, MAX_QUESTION_CHARS));
                }
                sentence.clear();
            }
            '.' | '!' | '。' | '\n' => sentence.clear(),
            c => sentence.push(c),
        }
    }
    found.truncate(MAX_QUESTIONS);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> RegexSet {
        RegexSet::new(DEFAULT_FAILURE_PATTERNS).unwrap()
    }

    #[test]
    fn failure_patterns_read_only_the_end_of_the_output() {
        let p = defaults();
        let cases: &[(&str, Option<&str>)] = &[
            ("Done. Report attached.", None),
            (
                "Error: Authentication failed for api.example.com",
                Some("Error: Authentication failed for api.example.com"),
            ),
            (
                "line 1\nbash: ./deploy: Permission denied\nbye",
                Some("bash: ./deploy: Permission denied"),
            ),
            (
                "No tokens found. Please log in.",
                Some("No tokens found. Please log in."),
            ),
            (
                "タスクの実行に失敗しました",
                Some("タスクの実行に失敗しました"),
            ),
            (
                "your API key expired yesterday; invalid token",
                Some("your API key expired yesterday; invalid token"),
            ),
        ];
        for (out, want) in cases {
            assert_eq!(failure(out, &p).as_deref(), *want, "{out:?}");
        }
        // A failure early in a long output, with a success after it, is not the outcome.
        let long = format!(
            "permission denied at first\n{}\nall good in the end",
            "x".repeat(600)
        );
        assert_eq!(failure(&long, &p), None);
    }

    #[test]
    fn three_questions_mean_the_agent_waits_for_the_owner() {
        let out = "I looked at the repo.\nBefore I go on:\n1. Which branch should I use?\n\
                   2. Should I bump the version?\n- May I push to origin? Thanks.";
        assert_eq!(
            questions(out),
            [
                "Which branch should I use?",
                "Should I bump the version?",
                "May I push to origin?"
            ]
        );
        let p = defaults();
        assert!(matches!(verdict(out, &p), Verdict::NeedsInput(q) if q.len() == 3));
        assert_eq!(verdict("Is it fine? Yes. Done?", &p), Verdict::Completed);
        assert_eq!(
            questions("What? What? What?"),
            ["What?"],
            "repeats count once"
        );
        assert_eq!(questions("?? ?"), Vec::<String>::new());
        // Failure wins over questions.
        let both = format!("{out}\npermission denied");
        assert!(matches!(verdict(&both, &p), Verdict::Failed(_)));
    }
}
