//! Prefix grants, by running what they cover.
//!
//! For each prefix gatebot offers (and a few an owner might type, or that were stored
//! under the old rules), a table of continuations: hostile ones that run a program,
//! write a file or read outside the project, and ordinary ones. Every command gatebot
//! says the prefix covers is **executed** under `bash -c` in a scratch git repository;
//! afterwards no marker file may exist, nothing in the repository (its `.git/config`
//! included) or outside it may have changed, and no secret from outside may have been
//! printed. The ordinary continuations must be covered and run, so the table cannot pass
//! by covering nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command as Process;

use gatebot::policy::shell::Command;
use gatebot::trust::grants::{offered_prefix, Scope};

const SECRET: &str = "SECRET-OUTSIDE-7f3a";

/// Every file under `root` (but git's index, which `git status` refreshes) with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.ends_with(".git/index") || path.ends_with(".git/index.lock") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    out
}

fn run(dir: &Path, home: &Path, command: &str) -> std::process::Output {
    Process::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GATEBOT_TEST_SECRET", SECRET)
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .unwrap()
}

fn has(program: &str) -> bool {
    Process::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn what_a_prefix_grant_covers_runs_nothing_writes_nothing_and_reads_nothing_outside() {
    if !has("bash") || !has("git") {
        eprintln!("prefix grant execution test skipped: bash or git is missing");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("repo");
    let outside = root.path().join("outside");
    let marker = root.path().join("markers");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(&marker).unwrap();
    std::fs::write(outside.join("secret"), SECRET).unwrap();
    let evil = format!("#!/bin/sh\ntouch '{}/ran-'\"$$\"\n", marker.display());
    for (name, body) in [
        ("evil.sh", evil.as_str()),
        ("a.txt", "b\na\na\nhello\n"),
        ("evil.mk", "test:\n\t./evil.sh\n"),
        ("Makefile", "test:\n\ttrue\n"),
    ] {
        std::fs::write(repo.join(name), body).unwrap();
    }
    let setup = run(
        &repo,
        &outside,
        "chmod +x evil.sh && git init -q && git -c user.name=t -c user.email=t@t add -A && \
         git -c user.name=t -c user.email=t@t commit -qm one && echo more >> a.txt && \
         git -c user.name=t -c user.email=t@t commit -qam two",
    );
    assert!(setup.status.success(), "{setup:?}");

    // (prefix, continuations that must not be covered, continuations that must be)
    let table: &[(&str, &[&str], &[&str])] = &[
        (
            "git log",
            &[
                "--output=out.txt",
                "--out=out.txt",
                "--out''put=out.txt",
                "'--output'=../outside/x",
                "-p --ext-diff",
                "--upload-p=x",
                "-c core.pager=./evil.sh",
                "; ./evil.sh",
                "&& ./evil.sh",
                "$(./evil.sh)",
                "`./evil.sh`",
                "| sh evil.sh",
                "> out.txt",
                "\u{a0}--output=out.txt",
            ],
            &[
                "--oneline -1",
                "-n 1 --stat",
                "--format=%h -- a.txt",
                "HEAD~1",
            ],
        ),
        (
            "git grep",
            &[
                "-O./evil.sh hello",
                "-Oevil.sh hello",
                "-O ./evil.sh hello",
                "--open-files-in-pager=./evil.sh hello",
                "--open=./evil.sh hello",
                "-f ../outside/secret",
            ],
            &["-n hello", "-c a -- a.txt"],
        ),
        (
            "git diff",
            &[
                "--output=out.txt",
                "--out=out.txt HEAD~1",
                "--ext-diff HEAD~1",
                "--no-index ../outside/secret a.txt",
            ],
            &["HEAD~1", "--stat HEAD~1"],
        ),
        (
            "git status",
            &["--porcelain ; ./evil.sh", "-uall\u{2003}&& ./evil.sh"],
            &["--short", "-sb"],
        ),
        (
            "git blame",
            &[
                "--contents ../outside/secret a.txt",
                "--contents ~/secret a.txt",
            ],
            &["a.txt", "-L 1,2 a.txt"],
        ),
        (
            "git",
            &[
                "submodule foreach ./evil.sh",
                "rebase -x ./evil.sh HEAD~1",
                "-c core.pager=./evil.sh log",
                "-c alias.x=!./evil.sh x",
                "--exec-path=. log",
                "-C ../outside status",
                "config core.fsmonitor ./evil.sh",
                "fetch --upload-pack='sh evil.sh' .",
                "branch newbranch",
                "stash",
                "push --force",
            ],
            &["log -1", "status"],
        ),
        (
            "sort",
            &[
                "-o out.txt a.txt",
                "-uoout.txt a.txt",
                "--output=out.txt a.txt",
                "--out=out.txt a.txt",
                "--compress-program=./evil.sh -S 1 a.txt",
                "-T . a.txt",
                "../outside/secret",
            ],
            &["a.txt", "-r -u a.txt"],
        ),
        ("uniq", &["a.txt out.txt"], &["a.txt", "-c a.txt"]),
        ("tree", &["-o out.txt", "-Lo 1 out.txt", "-R -H x"], &[]),
        (
            "rg",
            &["--pre=./evil.sh hello", "--pre ./evil.sh hello", "-z hello"],
            &[],
        ),
        (
            "cat",
            &[
                "/proc/self/environ",
                "../outside/secret",
                "~/secret",
                "a.txt ../outside/secret",
            ],
            &["a.txt", "-n a.txt"],
        ),
        (
            "ls",
            &["\u{a0}../outside", "-la ../outside", "/"],
            &["-la", "-1 ."],
        ),
        (
            "head",
            &["-c 100 /proc/self/environ"],
            &["-n 1 a.txt", "-1 a.txt"],
        ),
        (
            "grep",
            &["-r SECRET ../outside", "-f ../outside/secret a.txt"],
            &["-n hello a.txt"],
        ),
        // Stored under the old rules, or typed by an owner: build tools run project code.
        (
            "make test",
            &["-f evil.mk", "SHELL=./evil.sh", "install", ""],
            &[],
        ),
        ("make", &["test"], &[]),
        (
            "cargo test",
            &["--config build.rustc-wrapper=./evil.sh", ""],
            &[],
        ),
        ("npm test", &["--script-shell=./evil.sh", ""], &[]),
        ("npm", &["exec ./evil.sh", "run env"], &[]),
        ("go test", &["-exec ./evil.sh", "-toolexec=./evil.sh"], &[]),
    ];

    let before_repo = snapshot(&repo);
    let before_outside = snapshot(&outside);
    let mut ran = Vec::new();
    for (prefix, hostile, ordinary) in table {
        for (continuation, want) in hostile
            .iter()
            .map(|c| (c, false))
            .chain(ordinary.iter().map(|c| (c, true)))
        {
            let command = format!("{prefix} {continuation}");
            let covered = Scope::Prefix((*prefix).to_string())
                .covers(Some(&Command::read(&command)), &serde_json::Value::Null);
            assert_eq!(covered, want, "{command:?}");
            if !covered {
                continue;
            }
            let out = run(&repo, &outside, &command);
            let printed = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!printed.contains(SECRET), "{command:?} printed the secret");
            ran.push(command);
        }
    }
    assert!(ran.len() >= 20, "only {} commands ran: {ran:?}", ran.len());
    assert_eq!(
        std::fs::read_dir(&marker).unwrap().count(),
        0,
        "a covered command ran a program"
    );
    assert!(
        before_repo == snapshot(&repo),
        "a covered command changed the repository"
    );
    assert!(
        before_outside == snapshot(&outside),
        "a covered command changed a file outside"
    );

    // The prefixes above that gatebot itself offers are offered for the ordinary commands.
    for (command, prefix) in [
        ("git log --oneline -1", "git log"),
        ("git grep -n hello", "git grep"),
        ("sort a.txt", "sort"),
        ("cat a.txt", "cat"),
    ] {
        assert_eq!(
            offered_prefix(&Command::read(command)).as_deref(),
            Some(prefix)
        );
    }
}
