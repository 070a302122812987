//! What gatebot ships besides the daemon, tested as installed: `--version`, the shell
//! completions (in a real bash), the man pages (rendered by man and groff), and the
//! Debian package `packaging/build-deb` makes from this test binary's own build.
//!
//! The package's tests need Debian's tools (cargo-deb, dpkg-deb, lintian, man, groff,
//! systemd-analyze) and, to install into a throwaway root, root and overlayfs. Without
//! them each test prints one line saying what it skipped;
//! `GATEBOT_PACKAGE_TESTS=require` (set by `.ci/run`) makes that a failure instead.
//!
//! The install test runs dpkg and the package's maintainer scripts chrooted in an
//! overlay of this machine's own root (writes go to a tmpfs, the machine is untouched):
//! install, the daemon run from the packaged files as the `gatebot` user on the
//! sockets the packaged units describe (passed as systemd passes them), a request
//! submitted and decided by an owner in group `gatebot`, an upgrade that keeps the
//! database and an edited conffile, and a purge that leaves nothing. systemd does not
//! run there: enabling is checked by the links `deb-systemd-helper` makes, and
//! starting by the daemon run by hand on the same sockets.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const REQUIRE_VAR: &str = "GATEBOT_PACKAGE_TESTS";

/// True when every tool is on PATH; otherwise says once which are missing and returns
/// false (or fails, under `GATEBOT_PACKAGE_TESTS=require`).
fn have(tools: &[&str], what: &str) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    let line = format!(
        "{what} skipped: {} not installed (apt-get install lintian man-db groff systemd; \
         cargo install cargo-deb --locked)",
        missing.join(", ")
    );
    assert!(
        std::env::var(REQUIRE_VAR).as_deref() != Ok("require"),
        "{line}"
    );
    static SAID: Once = Once::new();
    SAID.call_once(|| eprintln!("{line}"));
    false
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = text(&run(Command::new(BIN).arg("--version")));
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(ROOT)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| text(&o).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    // The binary may be a commit behind the checkout (built, then committed): the form
    // is what is pinned; the commit must be one git knows, or `unknown` without git.
    let re =
        regex::Regex::new(r"^gatebot \d+\.\d+\.\d+ \(rev ([0-9a-f]{4,40}|unknown)\)\n$").unwrap();
    let rev = re
        .captures(&out)
        .unwrap_or_else(|| panic!("{out:?}"))
        .get(1)
        .unwrap()
        .as_str();
    if commit != "unknown" && rev != "unknown" {
        run(Command::new("git")
            .args(["cat-file", "-e", &format!("{rev}^{{commit}}")])
            .current_dir(ROOT));
    }
}

/// Loads `gatebot completions bash` in a bash and completes `line` (the cursor at its
/// end) as the shell would at a Tab: the words it offers.
fn bash_complete(line: &str, env: &[(&str, &str)]) -> Vec<String> {
    let dir = Path::new(BIN).parent().unwrap();
    let script = r#"
        source <(gatebot completions bash)
        read -ra COMP_WORDS <<< "$LINE"
        [[ "$LINE" == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        COMP_LINE="$LINE"; COMP_POINT=${#LINE}; COMP_TYPE=9
        fn=$(complete -p gatebot | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
        "$fn" gatebot "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let mut cmd = Command::new("bash");
    cmd.args(["--norc", "-c", script])
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .env("LINE", line)
        .env_remove("GATEBOT_SOCKET")
        .env_remove("GATEBOT_CONFIG")
        .current_dir(std::env::temp_dir());
    for (k, v) in env {
        cmd.env(k, v);
    }
    text(&run(&mut cmd))
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[tokio::test]
async fn bash_completes_commands_and_the_ids_that_wait() {
    let line = |l: &str| l.to_string();
    assert_eq!(
        tokio::task::spawn_blocking(move || bash_complete(&line("gatebot dec"), &[]))
            .await
            .unwrap(),
        ["decide"]
    );

    let app = crate::helpers::spawn_app("").await;
    let (_, short) = app
        .submit_pending(serde_json::json!({"agent": "intern", "tool": "send_email", "args": {}}))
        .await;
    let control = app.path().join("gatebot-control.sock");
    let socket = control.display().to_string();
    let offered = tokio::task::spawn_blocking({
        let socket = socket.clone();
        move || bash_complete("gatebot decide ", &[("GATEBOT_SOCKET", &socket)])
    })
    .await
    .unwrap();
    assert!(offered.contains(&short), "{short} not in {offered:?}");
    let after_id = tokio::task::spawn_blocking({
        let socket = socket.clone();
        let short = short.clone();
        move || {
            bash_complete(
                &format!("gatebot decide {short} app"),
                &[("GATEBOT_SOCKET", &socket)],
            )
        }
    })
    .await
    .unwrap();
    assert_eq!(after_id, ["approve", "approve-always"]);

    // No daemon there: no ids, and at once.
    let t = Instant::now();
    let none = tokio::task::spawn_blocking(|| {
        bash_complete(
            "gatebot decide ",
            &[("GATEBOT_SOCKET", "/nonexistent/gatebot-control.sock")],
        )
    })
    .await
    .unwrap();
    assert!(none.iter().all(|w| w.starts_with('-')), "{none:?}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    app.stop().await;
}

#[test]
fn zsh_fish_and_powershell_scripts_call_back_into_gatebot() {
    for (shell, marker) in [
        ("zsh", "#compdef gatebot"),
        (
            "fish",
            "complete --keep-order --exclusive --command gatebot",
        ),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = text(&run(Command::new(BIN).args(["completions", shell])));
        assert!(out.contains(marker), "{shell}: {out}");
        assert!(out.contains("GATEBOT_COMPLETE"), "{shell}: {out}");
    }
}

/// Renders a man page as lintian does; the warnings groff and man print.
fn man_warnings(page: &Path) -> String {
    let out = Command::new("man")
        .args(["--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z"])
        .arg(page)
        .env("LC_ALL", "C.UTF-8")
        .env("MANROFFSEQ", "")
        .env("MANWIDTH", "80")
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}: {:?}", page.display(), out);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn every_man_page_renders_without_warnings() {
    if !have(&["man", "groff"], "man page tests") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    run(Command::new(BIN).args(["man", "--dir"]).arg(dir.path()));
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pages.sort();
    // gatebot(1) and one per command, nested ones too.
    for name in [
        "gatebot.1",
        "gatebot-decide.1",
        "gatebot-task-add.1",
        "gatebot-man.1",
    ] {
        assert!(pages.iter().any(|p| p.ends_with(name)), "{name}: {pages:?}");
    }
    let warnings: Vec<String> = pages
        .iter()
        .map(|p| (p, man_warnings(p)))
        .filter(|(_, w)| !w.trim().is_empty())
        .map(|(p, w)| format!("{}: {w}", p.display()))
        .collect();
    assert!(warnings.is_empty(), "{}", warnings.join("\n"));
    // The page says what --help says.
    let page = std::fs::read_to_string(dir.path().join("gatebot-decide.1")).unwrap();
    assert!(page.contains("approve\\-always"), "{page}");
}

/// The package built from this test binary, and the same with a later version: built
/// once for every test that needs it.
struct Debs {
    _dir: tempfile::TempDir,
    first: PathBuf,
    upgrade: PathBuf,
}

fn debs() -> &'static Debs {
    static DEBS: OnceLock<Debs> = OnceLock::new();
    DEBS.get_or_init(|| {
        // A target directory of the test's own, with this build's binary where
        // cargo-deb takes it (it does not build: --no-build).
        let dir = tempfile::tempdir().unwrap();
        let release = dir.path().join("target/release");
        std::fs::create_dir_all(&release).unwrap();
        if std::fs::hard_link(BIN, release.join("gatebot")).is_err() {
            std::fs::copy(BIN, release.join("gatebot")).unwrap();
        }
        let build = |out: &str, version: Option<&str>| {
            let mut cmd = Command::new(Path::new(ROOT).join("packaging/build-deb"));
            cmd.args(["--no-build", "--fast", "--output"])
                .arg(dir.path().join(out))
                .env("CARGO_TARGET_DIR", dir.path().join("target"))
                .current_dir(ROOT);
            if let Some(v) = version {
                cmd.args(["--deb-version", v]);
            }
            run(&mut cmd);
            let found = std::fs::read_dir(dir.path().join(out))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.extension().is_some_and(|e| e == "deb"))
                .expect("a .deb");
            found
        };
        let first = build("first", None);
        let upgrade = build("upgrade", Some("99.0.0-1"));
        Debs {
            _dir: dir,
            first,
            upgrade,
        }
    })
}

const PACKAGE_TOOLS: &[&str] = &["cargo-deb", "dpkg-deb", "lintian", "systemd-analyze"];

#[test]
fn the_package_holds_the_binary_units_user_config_pages_completions_and_docs() {
    if !have(PACKAGE_TOOLS, "Debian package tests") {
        return;
    }
    let deb = &debs().first;
    let name = deb.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        regex::Regex::new(r"^gatebot_\d+\.\d+\.\d+-1_[a-z0-9]+\.deb$")
            .unwrap()
            .is_match(&name),
        "{name}"
    );
    let listing = text(&run(Command::new("dpkg-deb").arg("-c").arg(deb)));
    let entry = |path: &str| -> String {
        listing
            .lines()
            .find(|l| l.ends_with(&format!(" .{path}")))
            .unwrap_or_else(|| panic!("{path} is not in the package:\n{listing}"))
            .to_string()
    };
    for (path, mode) in [
        ("/usr/bin/gatebot", "-rwxr-xr-x 0/0"),
        ("/usr/lib/systemd/system/gatebot.service", "-rw-r--r-- 0/0"),
        ("/usr/lib/systemd/system/gatebot.socket", "-rw-r--r-- 0/0"),
        (
            "/usr/lib/systemd/system/gatebot-control.socket",
            "-rw-r--r-- 0/0",
        ),
        ("/usr/lib/sysusers.d/gatebot.conf", "-rw-r--r-- 0/0"),
        // root:gatebot once postinst has made the group (dpkg-statoverride).
        ("/etc/gatebot/bot.toml", "-rw-r----- 0/0"),
        ("/usr/share/man/man1/gatebot.1.gz", "-rw-r--r--"),
        ("/usr/share/man/man1/gatebot-decide.1.gz", "-rw-r--r--"),
        (
            "/usr/share/bash-completion/completions/gatebot",
            "-rw-r--r--",
        ),
        ("/usr/share/zsh/vendor-completions/_gatebot", "-rw-r--r--"),
        (
            "/usr/share/fish/vendor_completions.d/gatebot.fish",
            "-rw-r--r--",
        ),
        ("/usr/share/doc/gatebot/README.md", "-rw-r--r--"),
        ("/usr/share/doc/gatebot/docs/architecture.md", "-rw-r--r--"),
        ("/usr/share/doc/gatebot/examples/bot.toml", "-rw-r--r--"),
        ("/usr/share/doc/gatebot/copyright", "-rw-r--r--"),
        ("/usr/share/doc/gatebot/changelog.Debian.gz", "-rw-r--r--"),
    ] {
        let line = entry(path);
        assert!(line.starts_with(mode), "{path}: {line}");
    }
    // A man page for every command, as `gatebot man` writes them.
    let pages = listing.matches("/usr/share/man/man1/gatebot").count();
    assert_eq!(pages, gatebot::client::cli::man_pages().len(), "{listing}");
    let ctrl = tempfile::tempdir().unwrap();
    run(Command::new("dpkg-deb").arg("-e").arg(deb).arg(ctrl.path()));
    assert_eq!(
        std::fs::read_to_string(ctrl.path().join("conffiles")).unwrap(),
        "/etc/gatebot/bot.toml\n"
    );

    // lintian: no error and no warning (those the package keeps are overridden in
    // packaging/debian/lintian-overrides, each with why).
    let lint = Command::new("lintian")
        .args(["--fail-on", "error,warning", "--tag-display-limit", "0"])
        .arg(deb)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&lint.stdout);
    assert!(
        lint.status.success()
            && !said
                .lines()
                .any(|l| l.starts_with("E:") || l.starts_with("W:")),
        "lintian:\n{said}\n{}",
        String::from_utf8_lossy(&lint.stderr)
    );

    // The packaged files as installed: the units verify and are as hardened as
    // systemd/'s, and the config is a valid system install's.
    let root = tempfile::tempdir().unwrap();
    run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(root.path()));
    let bin = root.path().join("usr/bin/gatebot");
    let packaged = units_at(&root.path().join("usr/lib/systemd/system"), &bin);
    let source = units_at(&Path::new(ROOT).join("systemd"), Path::new(BIN));
    run(Command::new("systemd-analyze")
        .arg("verify")
        .args(unit_files(packaged.path())));
    let exposure = |dir: &Path| {
        let out = text(&run(Command::new("systemd-analyze")
            .args(["security", "--offline=yes", "--threshold=20"])
            .arg(dir.join("gatebot.service"))));
        out.lines()
            .last()
            .unwrap_or_default()
            .replace(&dir.display().to_string(), "")
    };
    assert_eq!(exposure(packaged.path()), exposure(source.path()));
    let service =
        std::fs::read_to_string(root.path().join("usr/lib/systemd/system/gatebot.service"))
            .unwrap();
    assert!(service.contains("\nExecStart=/usr/bin/gatebot run --config /etc/gatebot/bot.toml\n"));
    let config = root.path().join("etc/gatebot/bot.toml");
    run(Command::new(&bin)
        .args(["check-config", "--config"])
        .arg(&config)
        .env_remove("GATEBOT_SOCKET"));
    let toml = std::fs::read_to_string(&config).unwrap();
    for line in [
        "path = \"/var/lib/gatebot/gatebot.db\"",
        "socket = \"/run/gatebot/gatebot.sock\"",
        "control_socket = \"/run/gatebot/gatebot-control.sock\"",
        "listen = \"127.0.0.1:8378\"",
        "gatebot check-config --config /etc/gatebot/bot.toml",
    ] {
        assert!(toml.contains(line), "{line}:\n{toml}");
    }
}

/// A copy of the units in `dir`, their ExecStart= on `bin` (systemd-analyze wants the
/// binary there).
fn units_at(dir: &Path, bin: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    let exec = regex::Regex::new(r"(?m)^ExecStart=\S+").unwrap();
    for f in unit_files(dir) {
        let text = std::fs::read_to_string(&f).unwrap();
        let text = exec
            .replace(&text, format!("ExecStart={}", bin.display()).as_str())
            .into_owned();
        std::fs::write(to.path().join(f.file_name().unwrap()), text).unwrap();
    }
    to
}

fn unit_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "service" || e == "socket")
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    files
}

/// An overlay of this machine's root: everything the package does lands in a tmpfs,
/// unmounted (and so forgotten) when dropped.
struct Overlay {
    base: PathBuf,
    daemon: Option<std::process::Child>,
}

impl Overlay {
    fn mount() -> Option<Overlay> {
        let base = std::env::temp_dir().join(format!("gatebot-root-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "tmpfs"])
            .arg(&base)
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            return None;
        }
        for d in ["upper", "work", "root"] {
            std::fs::create_dir(base.join(d)).unwrap();
        }
        let o = Overlay { base, daemon: None };
        let opts = format!(
            "lowerdir=/,upperdir={},workdir={}",
            o.base.join("upper").display(),
            o.base.join("work").display()
        );
        let ok = Command::new("mount")
            .args(["-t", "overlay", "overlay", "-o", &opts])
            .arg(o.root())
            .status()
            .is_ok_and(|s| s.success())
            && Command::new("mount")
                .args(["--bind", "/dev"])
                .arg(o.root().join("dev"))
                .status()
                .is_ok_and(|s| s.success());
        ok.then_some(o)
    }

    fn root(&self) -> PathBuf {
        self.base.join("root")
    }

    fn path(&self, p: &str) -> PathBuf {
        self.root().join(p.trim_start_matches('/'))
    }

    /// dpkg run chrooted in the overlay, as on the machine itself (`dpkg --root` from
    /// outside would look the statoverride's group up in this machine's own files).
    /// The packages are at the same paths inside: the overlay's lower layer is `/`.
    fn dpkg(&self, args: &[&str], deb: Option<&Path>) -> String {
        let mut cmd = Command::new("chroot");
        cmd.arg(self.root())
            .arg("dpkg")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive");
        if let Some(d) = deb {
            cmd.arg(d);
        }
        let out = run(&mut cmd);
        format!("{}{}", text(&out), String::from_utf8_lossy(&out.stderr))
    }

    /// A command run chrooted in the overlay, as `user` (and its groups).
    fn chroot(&self, user: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("chroot");
        cmd.arg(format!("--userspec={user}:{user}"));
        let groups = self.sh(&format!("id -Gn {user} | tr ' ' ','"));
        cmd.arg(format!("--groups={}", groups.trim()))
            .arg(self.root())
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
            .env("HOME", "/")
            .current_dir("/");
        cmd
    }

    /// A shell line run chrooted as root.
    fn sh(&self, line: &str) -> String {
        text(&run(Command::new("chroot")
            .arg(self.root())
            .args(["sh", "-c", line])))
    }

    fn exists(&self, line: &str) -> bool {
        Command::new("chroot")
            .arg(self.root())
            .args(["sh", "-c", line])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    }

    /// The daemon as the `gatebot` user, on the sockets the installed units describe,
    /// bound and passed as systemd would (socket activation), the runtime directory as
    /// `RuntimeDirectory=` makes it.
    fn start_daemon(&mut self) {
        let unit = |name: &str| {
            std::fs::read_to_string(self.path(&format!("/usr/lib/systemd/system/{name}"))).unwrap()
        };
        let key = |text: &str, k: &str| -> String {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{k}=")))
                .unwrap_or_else(|| panic!("{k}= in {text}"))
                .to_string()
        };
        std::fs::create_dir_all(self.path("/run/gatebot")).unwrap();
        self.sh("chown gatebot:gatebot /run/gatebot && chmod 0711 /run/gatebot");
        let mut fds = Vec::new();
        for name in ["gatebot.socket", "gatebot-control.socket"] {
            let u = unit(name);
            let path = self.path(&key(&u, "ListenStream"));
            let _ = std::fs::remove_file(&path);
            let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
            self.sh(&format!(
                "chown {}:{} {} && chmod {} {}",
                key(&u, "SocketUser"),
                key(&u, "SocketGroup"),
                key(&u, "ListenStream"),
                key(&u, "SocketMode"),
                key(&u, "ListenStream"),
            ));
            fds.push((l, key(&u, "FileDescriptorName")));
        }
        let service = unit("gatebot.service");
        let exec: Vec<String> = key(&service, "ExecStart")
            .split(' ')
            .map(String::from)
            .collect();
        let names = fds
            .iter()
            .map(|(_, n)| n.as_str())
            .collect::<Vec<_>>()
            .join(":");
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(r#"LISTEN_PID=$$ exec chroot --userspec=gatebot:gatebot "$@""#)
            .arg("sh")
            .arg(self.root())
            .args(&exec)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("LISTEN_FDS", fds.len().to_string())
            .env("LISTEN_FDNAMES", names)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.base.join("daemon.log")).unwrap());
        let raw: Vec<i32> = fds
            .iter()
            .map(|(l, _)| std::os::fd::AsRawFd::as_raw_fd(l))
            .collect();
        // SAFETY: between fork and exec only dup2 and fcntl, on descriptors this
        // process owns; the first passed descriptor is fd 3 (SD_LISTEN_FDS_START).
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                let moved: Vec<i32> = raw
                    .iter()
                    .map(|&fd| libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10))
                    .collect();
                for (i, fd) in moved.into_iter().enumerate() {
                    if fd < 0 || libc::dup2(fd, 3 + i as i32) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        self.daemon = Some(cmd.spawn().unwrap());
        drop(fds);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.exists("gatebot pending --config /etc/gatebot/bot.toml") {
            assert!(
                Instant::now() < deadline,
                "the daemon did not answer: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop_daemon(&mut self) {
        if let Some(mut child) = self.daemon.take() {
            crate::helpers::signal(child.id(), libc::SIGTERM);
            let status = child.wait().unwrap();
            assert_eq!(status.code(), Some(0), "{}", self.log());
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.base.join("daemon.log")).unwrap_or_default()
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        if let Some(mut child) = self.daemon.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        for m in [self.root().join("dev"), self.root(), self.base.clone()] {
            let _ = Command::new("umount").arg(&m).status();
        }
        let _ = std::fs::remove_dir(&self.base);
    }
}

fn mode_owner(path: &Path) -> (u32, u32, u32) {
    let m = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (m.permissions().mode() & 0o7777, m.uid(), m.gid())
}

#[test]
fn the_package_installs_runs_upgrades_and_purges_in_a_throwaway_root() {
    if !have(
        &["cargo-deb", "dpkg", "dpkg-deb", "chroot", "mount"],
        "Debian install test",
    ) {
        return;
    }
    // Built first: the overlay shows the files of `/` as they are when it is mounted.
    let debs = debs();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let overlay = if root { Overlay::mount() } else { None };
    let Some(mut o) = overlay else {
        let line = "Debian install test skipped: it needs root and overlayfs (dpkg in a chroot on an overlay of /)";
        assert!(
            std::env::var(REQUIRE_VAR).as_deref() != Ok("require"),
            "{line}"
        );
        eprintln!("{line}");
        return;
    };

    // 1. Install: the accounts, the conffile's owner and mode, the database's
    //    directory, the units enabled (no systemd runs here: nothing is started).
    let said = o.dpkg(&["-i"], Some(&debs.first));
    assert!(!said.contains("?"), "dpkg asked something:\n{said}");
    assert!(o.exists("getent passwd gatebot"));
    assert!(o.exists("getent group gatebot-agents"));
    let gid = o
        .sh("getent group gatebot | cut -d: -f3")
        .trim()
        .parse::<u32>()
        .unwrap();
    let uid = o.sh("id -u gatebot").trim().parse::<u32>().unwrap();
    assert_eq!(
        o.sh("getent passwd gatebot | cut -d: -f6,7").trim(),
        "/var/lib/gatebot:/usr/sbin/nologin"
    );
    assert_eq!(
        mode_owner(&o.path("/etc/gatebot/bot.toml")),
        (0o640, 0, gid)
    );
    assert_eq!(mode_owner(&o.path("/var/lib/gatebot")), (0o700, uid, gid));
    assert_eq!(mode_owner(&o.path("/usr/bin/gatebot")).0, 0o755);
    for link in [
        "/etc/systemd/system/sockets.target.wants/gatebot.socket",
        "/etc/systemd/system/sockets.target.wants/gatebot-control.socket",
        "/etc/systemd/system/multi-user.target.wants/gatebot.service",
    ] {
        assert!(
            o.path(link).symlink_metadata().is_ok(),
            "{link} not enabled"
        );
    }
    assert!(o
        .sh("dpkg-statoverride --list /etc/gatebot/bot.toml")
        .contains("root gatebot 640 /etc/gatebot/bot.toml"));

    // 2. The owner's edit of the conffile (the dashboard moved to a free port), kept
    //    across the upgrade below.
    let port = crate::helpers::free_port().port();
    let conf = o.path("/etc/gatebot/bot.toml");
    let edited = std::fs::read_to_string(&conf).unwrap().replace(
        "listen = \"127.0.0.1:8378\"",
        &format!("listen = \"127.0.0.1:{port}\""),
    );
    std::fs::write(&conf, &edited).unwrap();

    // 3. The daemon from the packaged files, as gatebot; an agent asks, an owner (a
    //    member of group gatebot, nothing more) sees it and approves it.
    o.sh("useradd --create-home alice && usermod -aG gatebot alice && useradd agent && usermod -aG gatebot-agents agent");
    o.start_daemon();
    let ask = o
        .chroot(
            "agent",
            &[
                "gatebot",
                "ask",
                "--agent",
                "claude-code",
                "--tool",
                "Bash",
                "--args",
                r#"{"command": "git push"}"#,
                "--wait",
                "60s",
                "--json",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        let out = o
            .chroot("alice", &["gatebot", "pending", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "alice's gatebot pending: {out:?} {}",
            o.log()
        );
        let body: Value = serde_json::from_slice(&out.stdout).unwrap();
        if let Some(id) = body["requests"][0]["short_id"].as_str() {
            break id.to_string();
        }
        assert!(Instant::now() < deadline, "no pending request: {body}");
        std::thread::sleep(Duration::from_millis(100));
    };
    run(&mut o.chroot("alice", &["gatebot", "decide", &id, "approve"]));
    let asked = ask.wait_with_output().unwrap();
    assert!(asked.status.success(), "{asked:?}");
    let status = run(&mut o.chroot("alice", &["gatebot", "status", &id, "--json"]));
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["decided_by"], "alice", "{status}");
    // An agent's user is not an owner.
    let refused = o.chroot("agent", &["gatebot", "pending"]).output().unwrap();
    assert!(!refused.status.success(), "{refused:?}");
    o.stop_daemon();
    let db = o.path("/var/lib/gatebot/gatebot.db");
    assert_eq!(mode_owner(&db), (0o600, uid, gid));

    // 4. Upgrade to a later version: config and database kept, nothing asked.
    let said = o.dpkg(&["-i"], Some(&debs.upgrade));
    assert!(said.contains("99.0.0-1"), "{said}");
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), edited);
    assert_eq!(mode_owner(&conf), (0o640, 0, gid));
    o.start_daemon();
    let status = run(&mut o.chroot("alice", &["gatebot", "status", &id, "--json"]));
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["status"], "approved", "{status}");
    o.stop_daemon();

    // 5. Remove keeps the data and the config; purge deletes them and the accounts.
    o.dpkg(&["--remove", "gatebot"], None);
    assert!(conf.exists() && db.exists());
    assert!(!o.path("/usr/bin/gatebot").exists());
    o.dpkg(&["--purge", "gatebot"], None);
    for gone in [
        "/etc/gatebot",
        "/var/lib/gatebot",
        "/usr/lib/systemd/system/gatebot.service",
        "/usr/share/man/man1/gatebot.1.gz",
    ] {
        assert!(!o.path(gone).exists(), "{gone} is still there");
    }
    assert!(!o.exists("getent passwd gatebot"));
    assert!(!o.exists("getent group gatebot"));
    assert!(!o.exists("getent group gatebot-agents"));
    assert!(!o.exists("dpkg-statoverride --list /etc/gatebot/bot.toml"));
    assert!(
        o.path("/etc/systemd/system/multi-user.target.wants/gatebot.service")
            .symlink_metadata()
            .is_err(),
        "the enabled link is left"
    );
}
