//! `gatebot workflow start|event|status`, `gatebot workflows`, and check-ins in
//! `gatebot pending` and `gatebot decide`, through the real binary and its exit codes:
//! 0 continue, 1 stop (the reason on stderr), 2 error, 3 still waiting.

use std::process::Stdio;

use serde_json::Value;

use crate::cli::{text, Daemon};
use crate::helpers::eventually;

/// `gatebot workflow ARGS`, expecting exit `code`: (stdout, stderr).
async fn workflow(d: &Daemon, args: &[&str], code: i32) -> (String, String) {
    let mut all = vec!["workflow"];
    all.extend_from_slice(args);
    let out = d.cli(&all).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}\nstdout: {stdout}\nstderr: {stderr}"
    );
    (stdout, stderr)
}

/// The short id of the only waiting check-in, from `gatebot pending --json`.
async fn waiting_check_in(d: &Daemon) -> String {
    eventually("a waiting check-in in gatebot pending", async || {
        let out = d.cli(&["pending", "--json"]).await;
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        let list = v["check_ins"].as_array()?;
        assert!(list.len() <= 1, "{v}");
        list.first()
            .map(|c| c["short_id"].as_str().unwrap().to_string())
    })
    .await
}

#[tokio::test]
async fn a_pipeline_reports_waits_for_the_owner_and_exits_by_the_answer() {
    let d = Daemon::start_with("").await;
    let (stdout, _) = workflow(
        &d,
        &[
            "start",
            "--agent",
            "mailer",
            "--title",
            "Release 2.4",
            "--workflow",
            "release",
        ],
        0,
    )
    .await;
    let run = stdout.trim().to_string();
    assert_eq!(run.len(), 26, "prints the run's id: {stdout}");

    let (stdout, _) = workflow(
        &d,
        &[
            "event",
            &run,
            "--type",
            "step_complete",
            "--phase",
            "build",
            "--step",
            "lint",
            "--warning",
            "Style issue:low",
        ],
        0,
    )
    .await;
    assert_eq!(stdout.trim(), "continue");

    // The phase end waits for the owner, who continues from the command line.
    let waiting = d
        .command()
        .args([
            "workflow",
            "event",
            &run,
            "--type",
            "phase_complete",
            "--phase",
            "build",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let short = waiting_check_in(&d).await;
    let pending = d.cli(&["pending"]).await;
    let listed = text(&pending.stdout);
    assert!(listed.contains("Workflow check-ins waiting"), "{listed}");
    assert!(
        listed.contains(&short)
            && listed.contains("Release 2.4")
            && listed.contains("1 warning(s)"),
        "{listed}"
    );
    let decided = d
        .cli(&["decide", &short, "continue", "--reason", "go ahead"])
        .await;
    assert_eq!(decided.status.code(), Some(0), "{}", text(&decided.stderr));
    assert!(
        text(&decided.stdout).starts_with(&format!("continued check-in {short}")),
        "{}",
        text(&decided.stdout)
    );
    let out = waiting.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!("gatebot decide {short} continue|stop")),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !text(&out.stderr).contains("?."),
        "one stop after the check-in's question: {}",
        text(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["action"].as_str(), v["status"].as_str()),
        (Some("continue"), Some("running"))
    );
    assert!(v["reason"].as_str().unwrap().ends_with("go ahead"), "{v}");

    // --wait runs out: exit 3, and the check-in stays open.
    let (_, stderr) = workflow(
        &d,
        &[
            "event",
            &run,
            "--type",
            "phase_complete",
            "--phase",
            "test",
            "--warning",
            "Flaky test:low",
            "--wait",
            "1s",
        ],
        3,
    )
    .await;
    assert!(stderr.contains("still waiting"), "{stderr}");
    let short = waiting_check_in(&d).await;
    let (stdout, _) = workflow(&d, &["status", &run], 3).await;
    assert!(
        stdout.contains("waiting") && stdout.contains(&format!("check-in {short} waiting")),
        "{stdout}"
    );
    assert!(
        stdout.contains("Flaky test"),
        "the problems are listed: {stdout}"
    );

    // The owner stops it: status exits 1 with the owner's reason.
    let decided = d
        .cli(&["decide", &short, "stop", "--reason", "not today"])
        .await;
    assert_eq!(decided.status.code(), Some(0), "{}", text(&decided.stderr));
    let (stdout, stderr) = workflow(&d, &["status", &run, "--wait", "5s"], 1).await;
    assert!(stdout.contains("stop"), "{stdout}");
    assert!(
        stderr.contains("stopped by") && stderr.contains("not today"),
        "{stderr}"
    );
    // A second answer exits 1 and says who answered first.
    let again = d.cli(&["decide", &short, "continue"]).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already stopped by"),
        "{}",
        text(&again.stderr)
    );
    // The pipeline's next event is told to stop too.
    let (_, stderr) = workflow(
        &d,
        &[
            "event",
            &run,
            "--type",
            "step_complete",
            "--phase",
            "deploy",
        ],
        1,
    )
    .await;
    assert!(stderr.contains("not today"), "{stderr}");

    let list = d.cli(&["workflows"]).await;
    let listed = text(&list.stdout);
    assert!(
        listed.contains("stopped") && listed.contains("Release 2.4"),
        "{listed}"
    );
    assert!(
        listed.lines().all(|l| l.chars().count() <= 80),
        "80 columns: {listed}"
    );
    let list = d.cli(&["workflows", "--json", "--status", "stopped"]).await;
    let v: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(v["runs"][0]["id"], run.as_str());
}

#[tokio::test]
async fn a_warning_beyond_tolerance_exits_1_and_bad_input_exits_2() {
    let d = Daemon::start_with("").await;
    let (stdout, _) = workflow(&d, &["start", "--agent", "mailer", "--title", "Migrate"], 0).await;
    let run = stdout.trim().to_string();
    let (stdout, stderr) = workflow(
        &d,
        &[
            "event",
            &run,
            "--type",
            "step_complete",
            "--phase",
            "build",
            "--warning",
            "Deprecated API:medium",
        ],
        1,
    )
    .await;
    assert_eq!(stdout.trim(), "stop");
    assert!(
        stderr.contains("Warning exceeds tolerance: Deprecated API"),
        "{stderr}"
    );

    let (stdout, _) = workflow(&d, &["start", "--agent", "mailer", "--title", "Again"], 0).await;
    let run = stdout.trim().to_string();
    for (args, words) in [
        (
            vec!["event", &run, "--type", "step_done", "--phase", "p"],
            "--type must be",
        ),
        (
            vec!["event", &run, "--type", "step_complete", "--phase", ""],
            "`phase`",
        ),
        (
            vec![
                "event",
                &run,
                "--type",
                "step_complete",
                "--phase",
                "p",
                "--on-warning",
                "retry",
            ],
            "--on-warning",
        ),
        (
            vec![
                "event",
                "01JD3X4Y5Z6A7B8C9D0E1F2G3H",
                "--type",
                "step_complete",
                "--phase",
                "p",
            ],
            "no workflow run with id",
        ),
        (
            vec!["start", "--agent", "ghost", "--title", "t"],
            "unknown agent",
        ),
        (vec!["status", "nope"], "not_found"),
    ] {
        let (_, stderr) = workflow(&d, &args, 2).await;
        assert!(stderr.contains(words), "{args:?}: {stderr}");
    }
    // Nothing was stored by the refused events.
    let (stdout, _) = workflow(&d, &["status", &run], 0).await;
    assert!(stdout.contains("0 event(s)"), "{stdout}");
}
