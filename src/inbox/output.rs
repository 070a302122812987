//! How `gatebot worker` reads a command's standard output, line by line.
//!
//! - A plain line is progress, and part of the output whose tail becomes the result.
//! - A JSON object with `"type": "result"` (Claude Code's `--output-format json`, and
//!   the last line of `--output-format stream-json`) is the run's final word: its
//!   `result` is the result, `session_id` is kept so a task that needs input resumes the
//!   same session, `total_cost_usd` is the cost, `is_error` fails the task with Claude's
//!   own words: its `result`, else its `errors`, else its `subtype` ([`Final::error`]).
//! - `"type": "assistant"` lines of stream-json are progress: their text, or the tools
//!   the agent calls; other stream-json lines (`system`, `user` tool results) are
//!   skipped, except that the session id they carry is kept.

use serde_json::Value;

/// One line, read.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// Something to show as progress (and to keep for the result).
    Progress(String),
    /// The run's final word.
    Final(Final),
    /// Nothing to show; perhaps the session id.
    Skip { session_id: Option<String> },
}

/// What a `"type": "result"` line says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Final {
    pub result: Option<String>,
    pub session_id: Option<String>,
    pub cost_usd: Option<f64>,
    pub is_error: bool,
    /// `errors`: what went wrong, when the agent lists it (Claude Code's error results
    /// may carry no `result`).
    pub errors: Vec<String>,
    /// `subtype`: `success`, `error_max_turns`, `error_during_execution`, …
    pub subtype: Option<String>,
}

impl Final {
    /// What the agent said went wrong, for a result with `is_error`: its `result`, else
    /// its `errors` (joined), else its `subtype` (`error_max_turns`); `None` when it
    /// reported no error or said nothing.
    #[must_use]
    pub fn error(&self) -> Option<String> {
        if !self.is_error {
            return None;
        }
        let said = |s: &&str| !s.trim().is_empty();
        if let Some(r) = self.result.as_deref().filter(said) {
            return Some(r.trim().to_string());
        }
        let errors: Vec<&str> = self
            .errors
            .iter()
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
            .collect();
        if !errors.is_empty() {
            return Some(errors.join("; "));
        }
        self.subtype.as_deref().filter(said).map(str::to_string)
    }
}

/// Reads one line of output.
#[must_use]
pub fn read(line: &str) -> Line {
    let t = line.trim_end();
    if t.trim().is_empty() {
        return Line::Skip { session_id: None };
    }
    let Some(obj) = t
        .trim_start()
        .starts_with('{')
        .then(|| serde_json::from_str::<Value>(t).ok())
        .flatten()
        .filter(|v| v.get("type").and_then(Value::as_str).is_some())
    else {
        return Line::Progress(t.to_string());
    };
    let session_id = obj["session_id"].as_str().map(str::to_string);
    match obj["type"].as_str() {
        Some("result") => Line::Final(Final {
            result: obj["result"].as_str().map(str::to_string),
            session_id,
            // A cost gatebot would refuse is no cost: left out, so the result still goes.
            cost_usd: obj["total_cost_usd"]
                .as_f64()
                .or_else(|| obj["cost_usd"].as_f64())
                .filter(|c| super::wire::valid_cost(*c)),
            is_error: obj["is_error"].as_bool().unwrap_or(false),
            errors: obj["errors"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e.as_str().map(str::to_string))
                .collect(),
            subtype: obj["subtype"].as_str().map(str::to_string),
        }),
        Some("assistant") => {
            let parts: Vec<String> = obj["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| match p["type"].as_str() {
                    Some("text") => p["text"]
                        .as_str()
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_string),
                    Some("tool_use") => p["name"].as_str().map(|n| format!("⚙ {n}")),
                    _ => None,
                })
                .collect();
            if parts.is_empty() {
                Line::Skip { session_id }
            } else {
                Line::Progress(parts.join(" · "))
            }
        }
        _ => Line::Skip { session_id },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_progress_final_words_or_nothing() {
        let cases: Vec<(&str, Line)> = vec![
            (
                "Cloning the repo…",
                Line::Progress("Cloning the repo…".into()),
            ),
            ("   ", Line::Skip { session_id: None }),
            ("{not json", Line::Progress("{not json".into())),
            (
                r#"{"no_type": 1}"#,
                Line::Progress(r#"{"no_type": 1}"#.into()),
            ),
            (
                r#"{"type":"result","subtype":"success","is_error":false,"result":"Done: 3 files","session_id":"s-1","total_cost_usd":0.042}"#,
                Line::Final(Final {
                    result: Some("Done: 3 files".into()),
                    session_id: Some("s-1".into()),
                    cost_usd: Some(0.042),
                    is_error: false,
                    subtype: Some("success".into()),
                    ..Final::default()
                }),
            ),
            (
                // A cost gatebot would refuse is dropped; the result is kept.
                r#"{"type":"result","result":"Done","total_cost_usd":1e308}"#,
                Line::Final(Final {
                    result: Some("Done".into()),
                    ..Final::default()
                }),
            ),
            (
                r#"{"type":"result","is_error":true,"result":"API error"}"#,
                Line::Final(Final {
                    result: Some("API error".into()),
                    is_error: true,
                    ..Final::default()
                }),
            ),
            (
                r#"{"type":"assistant","session_id":"s-1","message":{"content":[{"type":"text","text":"Looking at the tests."},{"type":"tool_use","name":"Bash","input":{"command":"cargo test"}}]}}"#,
                Line::Progress("Looking at the tests. · ⚙ Bash".into()),
            ),
            (
                r#"{"type":"system","subtype":"init","session_id":"s-1"}"#,
                Line::Skip {
                    session_id: Some("s-1".into()),
                },
            ),
            (
                r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}"#,
                Line::Skip { session_id: None },
            ),
        ];
        for (line, want) in cases {
            assert_eq!(read(line), want, "{line}");
        }
    }

    #[test]
    fn an_error_result_says_what_went_wrong_in_the_agents_words() {
        let error = |line: &str| match read(line) {
            Line::Final(f) => f.error(),
            other => panic!("{other:?}"),
        };
        let cases = [
            (
                r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":"Credit balance is too low","session_id":"s-1"}"#,
                Some("Credit balance is too low"),
            ),
            (
                r#"{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["API Error: 529 Overloaded","retry later"]}"#,
                Some("API Error: 529 Overloaded; retry later"),
            ),
            (
                r#"{"type":"result","subtype":"error_max_turns","is_error":true,"result":""}"#,
                Some("error_max_turns"),
            ),
            (r#"{"type":"result","is_error":true}"#, None),
            (
                r#"{"type":"result","subtype":"success","is_error":false,"result":"Done"}"#,
                None,
            ),
        ];
        for (line, want) in cases {
            assert_eq!(error(line).as_deref(), want, "{line}");
        }
    }
}
