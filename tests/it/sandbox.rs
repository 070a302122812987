//! A user's machine in a temp dir, for the commands that look for gatebot or write its
//! set-up: a project directory without a `bot.toml` (where commands run), a home
//! directory, `$XDG_RUNTIME_DIR`, and the system's `/etc`, `/run`, `/var/lib` under
//! `GATEBOT_SYSTEM_ROOT`. No command run here reads the real home directory or `/etc`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tempfile::TempDir;
use tokio::process::Command;

pub const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

pub struct Sandbox {
    pub dir: TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let s = Sandbox {
            dir: tempfile::tempdir().unwrap(),
        };
        for d in [s.project(), s.home(), s.runtime(), s.root(), s.bin()] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::os::unix::fs::symlink(BIN, s.bin().join("gatebot")).unwrap();
        s
    }

    /// Where commands run: a project without a `bot.toml`.
    pub fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `$XDG_RUNTIME_DIR`.
    pub fn runtime(&self) -> PathBuf {
        self.dir.path().join("xdg-run")
    }

    /// `GATEBOT_SYSTEM_ROOT`: the system's `/`.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("sys")
    }

    /// On PATH: `gatebot` (this build), as an installed one would be.
    pub fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// `~/.config/gatebot/bot.toml`.
    pub fn user_config(&self) -> PathBuf {
        self.home().join(".config/gatebot/bot.toml")
    }

    /// `/etc/gatebot/bot.toml`.
    pub fn system_config(&self) -> PathBuf {
        self.root().join("etc/gatebot/bot.toml")
    }

    /// `gatebot ARGS…` in the project directory, with this sandbox's environment and no
    /// inherited gatebot settings; stdio piped.
    pub fn gatebot(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args);
        self.env(&mut c);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }

    /// The sandbox's environment on `c`, run in the project directory.
    pub fn env(&self, c: &mut Command) {
        for var in [
            "GATEBOT_SOCKET",
            "GATEBOT_URL",
            "GATEBOT_CA_FILE",
            "GATEBOT_CONFIG",
            "GATEBOT_TOKEN",
            "GATEBOT_AGENT",
            "GATEBOT_TASK_ID",
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
            "CLAUDE_CONFIG_DIR",
            "CODEX_HOME",
            "CREDENTIALS_DIRECTORY",
            "TELEGRAM_BOT_TOKEN",
            "SLACK_BOT_TOKEN",
            "SLACK_APP_TOKEN",
        ] {
            c.env_remove(var);
        }
        c.current_dir(self.project())
            .env("HOME", self.home())
            .env("XDG_RUNTIME_DIR", self.runtime())
            .env("GATEBOT_SYSTEM_ROOT", self.root())
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin().display()));
    }

    /// Runs `gatebot ARGS…` with `stdin` and returns its output.
    pub async fn run(&self, args: &[&str], stdin: &str) -> std::process::Output {
        use tokio::io::AsyncWriteExt;
        let mut child = self.gatebot(args).spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).await.unwrap();
        drop(input);
        tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("the command ended")
            .unwrap()
    }
}

/// Writes `text` at `path`, making its directories.
pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The fenced code blocks of `doc` (a path in the repository): `(language, body)`.
pub fn code_blocks(doc: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc)).unwrap();
    let mut blocks = Vec::new();
    let mut block: Option<(String, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match &mut block {
            None => {
                if let Some(lang) = trimmed.strip_prefix("```") {
                    block = Some((lang.to_string(), String::new()));
                }
            }
            Some((_, body)) => {
                if trimmed.starts_with("```") {
                    blocks.extend(block.take());
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    blocks
}
