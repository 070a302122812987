//! Block Kit for digests (see [`crate::channel::digest`]): the summary with a
//! "Review one by one" button, one request under review with its decision buttons
//! plus "Next" and "Summary", and the closed tally.

use serde_json::{json, Value};

use super::blocks::{self, escape};
use crate::channel::digest::{self, encode_nav, DigestView, Nav};
use crate::time::clock;

fn nav_button(label: &str, nav: &Nav) -> Value {
    let data = encode_nav(nav);
    json!({
        "type": "button",
        "text": {"type": "plain_text", "text": label, "emoji": true},
        "action_id": data,
        "value": data,
    })
}

fn section(text: String) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": text, "verbatim": true}})
}

/// The digest's fallback text and blocks.
#[must_use]
pub fn render(view: &DigestView) -> (String, Vec<Value>) {
    let s = view.summary();
    let title = escape(&digest::title(s));
    let groups: String = digest::group_lines(s)
        .iter()
        .map(|l| format!("\n• {}", escape(l)))
        .collect();
    match view {
        DigestView::Summary(_) => {
            let mut text = format!(
                "*gatebot digest*\n*{title}*\nThey arrived too fast to post one by one.{groups}"
            );
            if let Some(at) = s.next_expiry {
                text.push_str(&format!("\n*Next expiry:* {}", escape(&clock(at))));
            }
            let blocks = vec![
                section(text),
                json!({"type": "actions", "block_id": "gatebot_digest", "elements": [
                    nav_button("📋 Review one by one", &Nav::Review)
                ]}),
            ];
            (digest::title(s), blocks)
        }
        DigestView::Review {
            approval, position, ..
        } => {
            let (_, mut blocks) = blocks::prompt(approval);
            blocks.insert(
                0,
                section(format!(
                    "*gatebot digest* · request {position} of {} · {} pending",
                    s.total, s.pending
                )),
            );
            blocks.push(
                json!({"type": "actions", "block_id": "gatebot_digest", "elements": [
                    nav_button("⏭ Next", &Nav::Next(approval.id.clone())),
                    nav_button("📋 Summary", &Nav::Summary),
                ]}),
            );
            (digest::title(s), blocks)
        }
        DigestView::Closed(_) => {
            let text = format!(
                "*gatebot digest*\n*{title}*: {}.{groups}",
                escape(&digest::tally(s))
            );
            (digest::title(s), vec![section(text)])
        }
    }
}
