//! A throwaway PostgreSQL cluster for tests: `initdb` in a temp dir, started on a free
//! loopback port, stopped (`pg_ctl stop -m immediate`) and removed when the test binary
//! ends. One cluster per test binary, started by the first test that asks; every test gets
//! a fresh database of its own ([`database`]) and talks to it with `psql` (no PostgreSQL
//! client crate yet).
//!
//! The binaries are Debian's: the newest `/usr/lib/postgresql/<version>/bin`. `initdb`
//! refuses to run as root (CI runs as root), so there the cluster is made and run as the
//! `postgres` account the package creates (`runuser -u postgres --`); as anyone else it
//! runs as that user.
//!
//! Without PostgreSQL every test that asks returns at once and the binary prints one line
//! saying so; `GATEBOT_PG_TESTS=require` (set by `.ci/run`) makes that a failure instead.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

use serde_json::Value;

/// Set to `require` (as `.ci/run` does), a missing PostgreSQL fails the tests instead of
/// skipping them.
const REQUIRE_VAR: &str = "GATEBOT_PG_TESTS";

const SKIPPED: &str = "PostgreSQL tests skipped: no initdb and pg_ctl under \
                       /usr/lib/postgresql/*/bin (apt-get install postgresql)";

/// Where Debian installs each major version's binaries.
const INSTALL_ROOT: &str = "/usr/lib/postgresql";

/// The account the cluster runs as when the tests run as root.
const ACCOUNT: &str = "postgres";

/// The running cluster, shared by every test of the binary.
pub struct Cluster {
    /// The version's `bin` directory (`initdb`, `pg_ctl`, `psql`).
    bin: PathBuf,
    /// Holds `data/` (the cluster), `log` (the server's) and the server's Unix socket.
    dir: PathBuf,
    pub port: u16,
    /// Run `initdb` and `pg_ctl` as [`ACCOUNT`] (the tests run as root).
    as_account: bool,
    /// Databases made so far, for the next one's name.
    made: AtomicUsize,
    stopped: AtomicBool,
}

/// A fresh database of the cluster, for one test.
pub struct Database {
    cluster: &'static Cluster,
    pub name: String,
}

/// The newest `<root>/<version>/bin` holding both `initdb` and `pg_ctl`; versions compare
/// as numbers (`9.6` < `15` < `16`).
pub fn newest_bin(root: &Path) -> Option<PathBuf> {
    let version = |name: &str| -> Option<Vec<u64>> {
        name.split('.').map(|part| part.parse().ok()).collect()
    };
    std::fs::read_dir(root)
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let v = version(entry.file_name().to_str()?)?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()).then_some((v, bin))
        })
        .max()
        .map(|(_, bin)| bin)
}

/// A fresh, empty database on the shared cluster (started on first use).
///
/// `None` when PostgreSQL is not installed: the test then returns
/// (`let Some(db) = pg_cluster::database() else { return };`), and the test binary prints
/// one line saying it skipped the PostgreSQL tests. With `GATEBOT_PG_TESTS=require` a
/// missing PostgreSQL fails the test instead.
pub fn database() -> Option<Database> {
    static CLUSTER: OnceLock<Option<Result<Cluster, String>>> = OnceLock::new();
    let cluster = CLUSTER.get_or_init(|| {
        let bin = newest_bin(Path::new(INSTALL_ROOT))?;
        let started = Cluster::start(bin);
        if started.is_ok() {
            // Statics are never dropped: stop it when the binary exits. A binary killed
            // by a signal never gets there; the reaper `start` leaves behind does it then.
            extern "C" fn stop_at_exit() {
                if let Some(Some(Ok(cluster))) = CLUSTER.get() {
                    cluster.stop();
                }
            }
            // SAFETY: registers a plain function with no arguments.
            unsafe { libc::atexit(stop_at_exit) };
        }
        Some(started)
    });
    let Some(cluster) = cluster else {
        missing();
        return None;
    };
    // Installed but not starting is a failure, whatever the variable says.
    let cluster = match cluster {
        Ok(cluster) => cluster,
        Err(e) => panic!("the throwaway PostgreSQL cluster did not start: {e}"),
    };
    Some(cluster.create_database())
}

/// PostgreSQL is not installed: a failure with `GATEBOT_PG_TESTS=require`, else one line
/// (once) saying the tests were skipped.
fn missing() {
    if std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "require") {
        panic!(
            "{REQUIRE_VAR}=require, but PostgreSQL is missing (no initdb and pg_ctl \
             under {INSTALL_ROOT}/*/bin; apt-get install postgresql)"
        );
    }
    // Straight to stderr: the test harness captures `eprintln!` in tests.
    static SAY_ONCE: Once = Once::new();
    SAY_ONCE.call_once(|| {
        let _ = writeln!(std::io::stderr(), "{SKIPPED}");
    });
}

/// A cluster of one test's own, which it may stop and start again (the fault tests);
/// stopped and removed when dropped. `None` (with the skip line) without PostgreSQL.
pub fn own_cluster() -> Option<OwnCluster> {
    let Some(bin) = newest_bin(Path::new(INSTALL_ROOT)) else {
        missing();
        return None;
    };
    let cluster = Cluster::start(bin)
        .unwrap_or_else(|e| panic!("a throwaway PostgreSQL cluster did not start: {e}"));
    // Its databases borrow it for the test's length; dropping the handle stops it.
    Some(OwnCluster(Box::leak(Box::new(cluster))))
}

/// See [`own_cluster`].
pub struct OwnCluster(&'static Cluster);

impl OwnCluster {
    /// A fresh, empty database on it.
    pub fn database(&self) -> Database {
        self.0.create_database()
    }

    /// Stops the server as an operator would (`pg_ctl stop -m fast`: connections are
    /// ended), keeping its data.
    pub fn halt(&self) {
        let out = self
            .0
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.0.dir.join("data"))
            .args(["-w", "stop", "-m", "fast"])
            .output();
        check(out, "pg_ctl stop", "").unwrap_or_else(|e| panic!("{e}"));
    }

    /// Starts the server again on the same port, with the same data.
    pub fn resume(&self) {
        self.0
            .run_server()
            .unwrap_or_else(|e| panic!("{e}\n{}", self.0.log()));
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        self.0.stop();
    }
}

impl Cluster {
    fn start(bin: PathBuf) -> Result<Cluster, String> {
        // SAFETY: geteuid has no preconditions.
        let as_account = unsafe { libc::geteuid() } == 0;
        let dir = tempfile::Builder::new()
            .prefix("gatebot-pg-")
            .tempdir()
            .map_err(|e| format!("cannot make a temp dir: {e}"))?
            .keep();
        let mut cluster = Cluster {
            bin,
            dir,
            port: 0,
            as_account,
            made: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        };
        if as_account {
            let chown = Command::new("chown")
                .arg(format!("{ACCOUNT}:{ACCOUNT}"))
                .arg(&cluster.dir)
                .output();
            check(
                chown,
                "chown",
                &format!("running as root, the cluster runs as the `{ACCOUNT}` account"),
            )?;
        }
        let data = cluster.dir.join("data");
        let initdb = cluster
            .tool("initdb")
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
            // Text sorts byte by byte, as SQLite's BINARY collation does.
            .arg("--locale=C")
            .arg("-D")
            .arg(&data)
            .output();
        check(initdb, "initdb", "")?;
        cluster.make_certificates();
        cluster.reaper()?;
        // A free port is only free until someone takes it: try a few.
        let mut last = String::new();
        for _ in 0..5 {
            cluster.port = super::ports::free_port().port();
            match cluster.run_server() {
                Ok(()) => return Ok(cluster),
                Err(e) => last = format!("{e}\n{}", cluster.log()),
            }
        }
        cluster.stop();
        Err(last)
    }

    /// A certificate authority of the cluster's own (`tls/ca.pem`) and the server's
    /// certificate it signed for 127.0.0.1, made with `openssl` (which Debian's PostgreSQL
    /// packages bring): the server then offers TLS ([`Database::tls_ca`]). Without
    /// `openssl`, or should it fail, the server is plain and the TLS tests say they are
    /// skipped.
    fn make_certificates(&self) {
        let tls = self.dir.join("tls");
        let made = (|| -> Result<(), String> {
            std::fs::create_dir(&tls).map_err(|e| e.to_string())?;
            std::fs::write(
                tls.join("server.ext"),
                "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n\
                 keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
            )
            .map_err(|e| e.to_string())?;
            let ec = [
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
            ];
            let steps: [Vec<&str>; 3] = [
                [
                    &["req", "-x509", "-new"][..],
                    &ec,
                    &[
                        "-keyout",
                        "ca.key",
                        "-out",
                        "ca.pem",
                        "-days",
                        "7",
                        "-subj",
                        "/CN=gatebot test CA",
                        "-addext",
                        "basicConstraints=critical,CA:TRUE",
                        "-addext",
                        "keyUsage=critical,keyCertSign,cRLSign",
                    ],
                ]
                .concat(),
                [
                    &["req", "-new"][..],
                    &ec,
                    &[
                        "-keyout",
                        "server.key",
                        "-out",
                        "server.csr",
                        "-subj",
                        "/CN=127.0.0.1",
                    ],
                ]
                .concat(),
                vec![
                    "x509",
                    "-req",
                    "-in",
                    "server.csr",
                    "-CA",
                    "ca.pem",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-out",
                    "server.pem",
                    "-days",
                    "7",
                    "-extfile",
                    "server.ext",
                ],
            ];
            for args in steps {
                let out = Command::new("openssl")
                    .args(&args)
                    .current_dir(&tls)
                    .stdin(Stdio::null())
                    .output();
                check(out, "openssl", "making the test cluster's certificates")?;
            }
            // PostgreSQL refuses a key others may read.
            std::fs::set_permissions(
                tls.join("server.key"),
                std::os::unix::fs::PermissionsExt::from_mode(0o600),
            )
            .map_err(|e| e.to_string())?;
            if self.as_account {
                let out = Command::new("chown")
                    .args(["-R", &format!("{ACCOUNT}:{ACCOUNT}")])
                    .arg(&tls)
                    .output();
                check(out, "chown", "")?;
            }
            Ok(())
        })();
        if let Err(e) = made {
            eprintln!("the test PostgreSQL cluster offers no TLS: {e}");
            let _ = std::fs::remove_file(tls.join("server.pem"));
        }
    }

    /// Starts the server on `port`, waiting until it takes connections.
    fn run_server(&self) -> Result<(), String> {
        let mut options = format!(
            // Hundreds of test daemons share it, each with a few connections.
            "-k {} -p {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=1000",
            self.dir.display(),
            self.port
        );
        let tls = self.dir.join("tls");
        if tls.join("server.pem").is_file() {
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                tls.join("server.pem").display(),
                tls.join("server.key").display()
            ));
        }
        let started = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-l")
            .arg(self.dir.join("log"))
            .args(["-w", "-t", "60", "-o", &options, "start"])
            .output();
        check(started, "pg_ctl start", "")
    }

    /// A fresh, empty database.
    fn create_database(&'static self) -> Database {
        let name = format!("t{}", self.made.fetch_add(1, Ordering::Relaxed) + 1);
        self.psql(
            "postgres",
            ["-c", &format!("CREATE DATABASE {name}")],
            false,
        )
        .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        Database {
            cluster: self,
            name,
        }
    }

    /// One of the version's binaries, run as the account the cluster belongs to.
    fn tool(&self, name: &str) -> Command {
        let path = self.bin.join(name);
        let mut cmd = if self.as_account {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", ACCOUNT, "--"]).arg(path);
            cmd
        } else {
            Command::new(path)
        };
        // The account may not be allowed into the test's directory.
        cmd.current_dir(&self.dir).stdin(Stdio::null());
        cmd
    }

    /// The shell words of `tool name args…`, for the reaper's script.
    fn tool_words(&self, name: &str) -> String {
        let path = quote(&self.bin.join(name));
        if self.as_account {
            format!("runuser -u {ACCOUNT} -- {path}")
        } else {
            path
        }
    }

    /// Leaves a process behind that stops the cluster and removes its directory once this
    /// test binary is gone, however it ended. In its own process group, so a Ctrl-C that
    /// stops the tests does not stop it too (the server, which `pg_ctl` detaches from the
    /// terminal, would then run on).
    fn reaper(&self) -> Result<(), String> {
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
             {pg_ctl} -D {data} stop -m immediate >/dev/null 2>&1; rm -rf {dir}",
            pid = std::process::id(),
            pg_ctl = self.tool_words("pg_ctl"),
            data = quote(&self.dir.join("data")),
            dir = quote(&self.dir),
        );
        Command::new("sh")
            .args(["-c", &script])
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map(drop)
            .map_err(|e| format!("cannot start the reaper (sh): {e}"))
    }

    /// Stops the server at once (nothing in it is kept) and removes its directory. Once.
    fn stop(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        if self.dir.join("data/postmaster.pid").exists() {
            let _ = self
                .tool("pg_ctl")
                .arg("-D")
                .arg(self.dir.join("data"))
                .args(["stop", "-m", "immediate"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// The server's log, for a failure's message.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// Runs psql on database `db` with `input` (`-c SQL` or `-f FILE`), in one
    /// transaction unless `transaction` is false (`CREATE DATABASE` cannot be in one); its
    /// output, unaligned and without headers, or psql's error.
    fn psql(&self, db: &str, input: [&str; 2], transaction: bool) -> Result<String, String> {
        let port = self.port.to_string();
        let mut cmd = Command::new(self.bin.join("psql"));
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-d", db])
            .args(input)
            .stdin(Stdio::null());
        if transaction {
            cmd.arg("--single-transaction");
        }
        let out = cmd.output().map_err(|e| format!("cannot run psql: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Database {
    /// The URL gatebot's `[store] url` takes for this database (the cluster trusts
    /// loopback: no password).
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/{}",
            self.cluster.port, self.name
        )
    }

    /// The certificate authority that signed the server's certificate, when the cluster
    /// offers TLS ([`Cluster::make_certificates`]).
    pub fn tls_ca(&self) -> Option<PathBuf> {
        let tls = self.cluster.dir.join("tls");
        tls.join("server.pem").is_file().then(|| tls.join("ca.pem"))
    }

    /// Runs `sql` (one or more statements, in one transaction): its output, unaligned
    /// and without headers. Panics with psql's error.
    pub fn run(&self, sql: &str) -> String {
        self.try_run(sql)
            .unwrap_or_else(|e| panic!("psql -d {}: {e}\nSQL: {sql}", self.name))
    }

    /// Like [`Database::run`], but a refused statement is an `Err` with PostgreSQL's
    /// message (`ERROR:  …`), and nothing of it is kept.
    pub fn try_run(&self, sql: &str) -> Result<String, String> {
        self.cluster.psql(&self.name, ["-c", sql], true)
    }

    /// The rows of a query, each a JSON object by column name.
    pub fn rows(&self, query: &str) -> Vec<Value> {
        let json = self.run(&format!(
            "SELECT coalesce(json_agg(q), '[]') FROM ({query}) q"
        ));
        serde_json::from_str(json.trim())
            .unwrap_or_else(|e| panic!("{e}: psql printed {json:?} for {query}"))
    }

    /// Applies a migration file, in one transaction.
    pub fn apply(&self, file: &Path) {
        let path = file.to_str().expect("a UTF-8 path");
        self.cluster
            .psql(&self.name, ["-f", path], true)
            .unwrap_or_else(|e| panic!("{} does not apply: {e}", file.display()));
    }
}

/// Ok when the command ran and succeeded; else what it printed.
fn check(out: std::io::Result<Output>, what: &str, context: &str) -> Result<(), String> {
    let out = out.map_err(|e| format!("cannot run {what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}){}{context}:\n{}{}",
        out.status,
        if context.is_empty() { "" } else { "; " },
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// `path` as one shell word.
fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

#[test]
fn the_newest_installed_version_is_used() {
    let root = tempfile::tempdir().unwrap();
    let install = |version: &str, tools: &[&str]| {
        let bin = root.path().join(version).join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for tool in tools {
            std::fs::write(bin.join(tool), "").unwrap();
        }
    };
    assert_eq!(newest_bin(root.path()), None, "nothing installed");
    install("9.6", &["initdb", "pg_ctl"]);
    install("15", &["initdb", "pg_ctl"]);
    // A newer version with only the client (psql) installed is not a server.
    install("17", &["psql"]);
    install("notes", &["initdb", "pg_ctl"]);
    assert_eq!(newest_bin(root.path()), Some(root.path().join("15/bin")));
    install("16", &["initdb", "pg_ctl"]);
    assert_eq!(newest_bin(root.path()), Some(root.path().join("16/bin")));
    assert_eq!(newest_bin(&root.path().join("missing")), None);
}

#[test]
fn each_test_gets_a_fresh_database_of_one_cluster() {
    let Some(a) = database() else { return };
    let b = database().unwrap();
    assert_ne!(a.name, b.name);
    a.run("CREATE TABLE t (x bigint)");
    assert_eq!(
        b.run("SELECT to_regclass('t') IS NULL").trim(),
        "t",
        "b does not see a's table"
    );
    assert_eq!(a.cluster.port, b.cluster.port, "one cluster");
    let server = a.rows(
        "SELECT current_setting('server_version_num')::int AS version, \
         current_setting('fsync') AS fsync, current_setting('lc_collate') AS collate, \
         current_setting('listen_addresses') AS listen",
    );
    let server = &server[0];
    assert!(server["version"].as_i64().unwrap() >= 150000, "{server}");
    assert_eq!(server["fsync"], "off");
    assert_eq!(server["collate"], "C");
    assert_eq!(server["listen"], "127.0.0.1");
    // A refused statement says why, and leaves nothing behind.
    let err = a
        .try_run("INSERT INTO t VALUES (1); INSERT INTO t VALUES ('x')")
        .unwrap_err();
    assert!(
        err.contains("invalid input syntax for type bigint"),
        "{err}"
    );
    assert_eq!(a.run("SELECT count(*) FROM t").trim(), "0");
}
