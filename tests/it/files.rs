//! What the daemon does with the paths it is given, as the real binary: a socket path
//! is claimed only if it holds nothing or a stale socket (never the database or any
//! other file), and the database, its WAL and SHM, the directories it creates and
//! its sockets get their modes whatever the umask it was started with.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use gatebot::client::Client;
use serde_json::json;
use tokio::process::{Child, Command};

use crate::helpers::{eventually, BASE_CONFIG};

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

/// `gatebot run` on `dir/bot.toml`, with `umask` as the mask it starts with.
pub(crate) fn run_daemon(dir: &Path, umask: u32) -> Child {
    let mut cmd = Command::new(BIN);
    cmd.args(["run", "--config"])
        .arg(dir.join("bot.toml"))
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // SAFETY: umask is async-signal-safe and touches no memory.
    unsafe {
        cmd.pre_exec(move || {
            libc::umask(umask as libc::mode_t);
            Ok(())
        });
    }
    cmd.spawn().unwrap()
}

/// Stops the daemon with SIGTERM and returns its output.
pub(crate) async fn stop(child: Child) -> Output {
    crate::helpers::signal(child.id().unwrap(), libc::SIGTERM);
    tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the daemon stops")
        .unwrap()
}

/// Runs a daemon that must refuse to start; returns its exit code and log.
async fn refused_start(dir: &Path) -> (Option<i32>, String) {
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        run_daemon(dir, 0o022).wait_with_output(),
    )
    .await
    .expect("a refused start exits")
    .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

#[tokio::test]
async fn anything_but_a_stale_socket_at_a_socket_path_stops_the_start_and_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let config = |socket: &str, control: &str| {
        std::fs::write(
            dir.path().join("bot.toml"),
            format!(
                "[queue]\nsocket = \"{socket}\"\ncontrol_socket = \"{control}\"\n{BASE_CONFIG}"
            ),
        )
        .unwrap();
    };

    // A regular file (say, notes or another program's data) at the agents' socket path.
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "keep me").unwrap();
    config("notes.txt", "gatebot-control.sock");
    let (code, log) = refused_start(dir.path()).await;
    assert_eq!(code, Some(2), "{log}");
    assert!(
        log.contains("`queue.socket`")
            && log.contains(&notes.display().to_string())
            && log.contains("a regular file, not a socket"),
        "{log}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "keep me");
    // The database the daemon opened before it refused is kept too.
    assert!(dir.path().join("gatebot.db").exists());

    // A directory, and a symbolic link to a socket, at the control socket's path.
    std::fs::create_dir(dir.path().join("ctl")).unwrap();
    config("gatebot.sock", "ctl");
    let (code, log) = refused_start(dir.path()).await;
    assert_eq!(code, Some(2), "{log}");
    assert!(
        log.contains("`queue.control_socket`") && log.contains("a directory, not a socket"),
        "{log}"
    );
    assert!(dir.path().join("ctl").is_dir());
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("real.sock");
    drop(std::os::unix::net::UnixListener::bind(&target).unwrap());
    std::os::unix::fs::symlink(&target, dir.path().join("link.sock")).unwrap();
    config("gatebot.sock", "link.sock");
    let (code, log) = refused_start(dir.path()).await;
    assert_eq!(code, Some(2), "{log}");
    assert!(log.contains("a symbolic link, not a socket"), "{log}");
    assert!(target.exists(), "the link's target is not touched");

    // A stale socket (the refused starts left the agents' one behind) is still
    // replaced, and the daemon serves.
    config("gatebot.sock", "gatebot-control.sock");
    let stale = dir.path().join("gatebot.sock");
    if !stale.exists() {
        drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    }
    {
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&stale)
            .unwrap()
            .file_type()
            .is_socket());
    }
    let child = run_daemon(dir.path(), 0o022);
    let agent = Client::new(dir.path().join("gatebot.sock"));
    eventually("the daemon serves on the reclaimed socket", async || {
        agent.get("/v1/health").await.ok()
    })
    .await;
    let out = stop(child).await;
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test]
async fn check_config_reports_a_socket_on_the_database_or_two_sockets_on_one_path() {
    let dir = tempfile::tempdir().unwrap();
    let check = async |queue: &str| {
        std::fs::write(
            dir.path().join("bot.toml"),
            format!("[store]\npath = \"data/gatebot.db\"\n\n[queue]\n{queue}\n"),
        )
        .unwrap();
        let out = Command::new(BIN)
            .args(["check-config", "--config"])
            .arg(dir.path().join("bot.toml"))
            .output()
            .await
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = check("socket = \"data/gatebot.db\"").await;
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(":5:") && err.contains("queue.socket") && err.contains("the database"),
        "{err}"
    );
    let (code, err) = check("control_socket = \"./data/gatebot.db-wal\"").await;
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("queue.control_socket") && err.contains("write-ahead log"),
        "{err}"
    );
    let abs = dir.path().join("one.sock");
    let (code, err) = check(&format!(
        "socket = \"one.sock\"\ncontrol_socket = \"{}\"",
        abs.display()
    ))
    .await;
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(":6:") && err.contains("queue.control_socket"),
        "{err}"
    );
}

#[tokio::test]
async fn the_database_directories_and_sockets_get_their_modes_whatever_the_umask() {
    for umask in [0o000, 0o277] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("bot.toml"),
            format!(
                "[store]\npath = \"state/db/gatebot.db\"\n\n[queue]\nsocket = \"run/gatebot.sock\"\n\
                 control_socket = \"run/gatebot-control.sock\"\n{BASE_CONFIG}"
            ),
        )
        .unwrap();
        let child = run_daemon(dir.path(), umask);
        let agent = Client::new(dir.path().join("run/gatebot.sock"));
        eventually("the daemon serves", async || {
            agent.get("/v1/health").await.ok()
        })
        .await;
        // A write, so the WAL and SHM hold something.
        let res = agent
            .post(
                "/v1/requests",
                &json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann"}}),
            )
            .await
            .unwrap();
        assert_eq!(res.body["status"], "pending", "{:?}", res.body);

        let p = |rel: &str| dir.path().join(rel);
        for (file, want) in [
            ("state", 0o700),
            ("state/db", 0o700),
            ("state/db/gatebot.db", 0o600),
            ("state/db/gatebot.db-wal", 0o600),
            ("state/db/gatebot.db-shm", 0o600),
            ("run", 0o711),
            ("run/gatebot.sock", 0o660),
            ("run/gatebot-control.sock", 0o600),
        ] {
            assert_eq!(mode(&p(file)), want, "{file} under umask {umask:o}");
        }
        let out = stop(child).await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[tokio::test]
async fn a_database_an_older_version_left_readable_is_made_private() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bot.toml"), BASE_CONFIG).unwrap();
    let db = dir.path().join("gatebot.db");
    gatebot::engine::open_database(&db).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).unwrap();

    let child = run_daemon(dir.path(), 0o022);
    let agent = Client::new(dir.path().join("gatebot.sock"));
    eventually("the daemon serves", async || {
        agent.get("/v1/health").await.ok()
    })
    .await;
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(&dir.path().join("gatebot.db-wal")), 0o600);
    let out = stop(child).await;
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("readable by group or others (mode 640)"),
        "{log}"
    );
}
