//! `gatebot task add|status|answer|cancel|retry` and `gatebot tasks`: the owner's side of
//! the inbox, on the control socket.
//!
//! Exit codes: `task add`, `tasks` 0 (2 on errors); `task status` 0 completed, 1
//! failed, rejected or cancelled, 3 still open when the wait ended (queued, running,
//! or waiting for the owner); `task cancel|retry` 0, 1 when the task's state does not
//! allow it (it says why); `task answer` 0, 1 when the task asks nothing now.

use std::io::Read;

use serde_json::json;

use super::out::outln;
use super::{encode, expect_ok, listing, pretty, EXIT_GO, EXIT_NO, EXIT_PENDING};
use crate::client::{Client, Response};
use crate::inbox::wire::TaskView;
use crate::inbox::TaskStatus;
use crate::time::range;

/// Who the owner at this terminal is, for the audit trail.
fn task_of(res: Response) -> Result<TaskView, String> {
    serde_json::from_value(res.body).map_err(|e| format!("unexpected answer from gatebot: {e}"))
}

/// `gatebot task add WORDS… [--agent A] [--intent I]`; `-` reads the words from stdin.
pub(super) async fn add(
    client: &Client,
    words: &[String],
    agent: Option<&str>,
    intent: Option<&str>,
    json: bool,
) -> Result<u8, String> {
    let text = if words == ["-"] {
        let mut buf = String::new();
        std::io::stdin()
            .read_to_string(&mut buf)
            .map_err(|e| format!("cannot read the task from stdin: {e}"))?;
        buf
    } else {
        words.join(" ")
    };
    let mut body = json!({"text": text});
    if let Some(a) = agent {
        body["agent"] = json!(a);
    }
    if let Some(i) = intent {
        body["intent"] = json!(i);
    }
    let view = task_of(expect_ok(client.post("/v1/tasks", &body).await)?)?;
    print(&view, json);
    Ok(EXIT_GO)
}

/// `gatebot task status ID [--wait D]`.
pub(super) async fn status(
    client: &Client,
    id: &str,
    wait: Option<&str>,
    json: bool,
) -> Result<u8, String> {
    let wait = wait
        .map(|w| super::flag_duration("--wait", w, range::CLIENT_WAIT))
        .transpose()?;
    let path = format!("/v1/tasks/{}", encode(id));
    let view = match wait {
        None => task_of(expect_ok(client.get(&path).await)?)?,
        // A restart meanwhile is waited for: the task survives it.
        Some(total) => {
            super::long_poll(client, &path, total, |v: &TaskView| {
                !matches!(v.status, TaskStatus::Queued | TaskStatus::Running)
            })
            .await?
        }
    };
    print(&view, json);
    Ok(match view.status {
        TaskStatus::Completed => EXIT_GO,
        TaskStatus::Failed | TaskStatus::Rejected | TaskStatus::Cancelled => EXIT_NO,
        _ => EXIT_PENDING,
    })
}

/// `gatebot task cancel|retry ID`.
pub(super) async fn step(client: &Client, id: &str, verb: &str, json: bool) -> Result<u8, String> {
    let res = client
        .post(&format!("/v1/tasks/{}/{verb}", encode(id)), &json!({}))
        .await
        .map_err(|e| e.to_string())?;
    if matches!(res.error_code(), Some("task_conflict" | "task_cancelled")) {
        eprintln!("{}", res.error_message());
        return Ok(EXIT_NO);
    }
    let view = task_of(expect_ok(Ok(res))?)?;
    print(&view, json);
    Ok(EXIT_GO)
}

/// `gatebot task answer ID WORDS…`: answers the question the task waits on.
pub(super) async fn answer(
    client: &Client,
    id: &str,
    words: &[String],
    json: bool,
) -> Result<u8, String> {
    let res = client
        .post(
            &format!("/v1/tasks/{}/answer", encode(id)),
            &json!({"text": words.join(" ")}),
        )
        .await
        .map_err(|e| e.to_string())?;
    if res.error_code() == Some("task_conflict") {
        eprintln!("{}", res.error_message());
        return Ok(EXIT_NO);
    }
    let view = task_of(expect_ok(Ok(res))?)?;
    print(&view, json);
    Ok(EXIT_GO)
}

/// `gatebot tasks [--all] [--agent A]`.
pub(super) async fn list(
    client: &Client,
    all: bool,
    agent: Option<&str>,
    json: bool,
) -> Result<u8, String> {
    let mut path = format!("/v1/tasks?all={all}");
    if let Some(a) = agent {
        path.push_str(&format!("&agent={}", encode(a)));
    }
    let Some(tasks) = listing::<TaskView>(client, &path, "tasks", json).await? else {
        return Ok(EXIT_GO);
    };
    if tasks.is_empty() {
        outln!("{}", if all { "No tasks." } else { "No open tasks." });
    }
    for t in &tasks {
        // Within 80 columns: the summary is cut to what is left of the line.
        outln!(
            "{:<8}  {:<9} {:<13} {:<16} {}",
            t.short_id,
            t.status.as_str(),
            t.intent.label(),
            crate::words::cut(&t.agent, 16),
            crate::words::cut(&t.summary, 29)
        );
    }
    Ok(EXIT_GO)
}

/// A task, as JSON or as a few lines: status and ids, what and who, then what the
/// owner may need (the question, how to confirm), the progress or the outcome.
pub(super) fn print(t: &TaskView, json: bool) {
    if json {
        outln!("{}", pretty(&serde_json::to_value(t).unwrap_or_default()));
        return;
    }
    for line in t.lines() {
        outln!("{line}");
    }
    if let (TaskStatus::Failed, Some(e)) = (t.status, &t.error) {
        eprintln!("failed: {e}");
    }
}
