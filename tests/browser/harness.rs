//! A real Chromium driven over WebDriver: [`Browser::start`] runs chromedriver on a free
//! loopback port with a headless Chromium behind it, and stops both (every process of
//! theirs) when the `Browser` is dropped, also when the test fails.
//!
//! Every helper panics with what it was doing, the page's URL and an excerpt of its text:
//! a browser test reads as a list of steps, and its failure says which step and where.
//! Waits poll (every 50 ms) up to a timeout that is generous on purpose ([`WAIT`]): they
//! are not timing assertions, and a loaded CI machine must not make them flaky.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::cookies::Cookie;
use fantoccini::elements::Element;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::sync::{Semaphore, SemaphorePermit};

/// How long a wait lasts by default: things that take milliseconds get 15 s.
pub const WAIT: Duration = Duration::from_secs(15);

/// A phone's viewport (an iPhone 12 to 15) and a laptop's.
pub const PHONE: (u32, u32) = (390, 844);
pub const DESKTOP: (u32, u32) = (1280, 900);

/// Set to `require` (as `.ci/run` does), a missing Chromium fails the tests instead of
/// skipping them.
const REQUIRE_VAR: &str = "GATEBOT_BROWSER_TESTS";

const SKIPPED: &str = "browser tests skipped: Chromium and chromedriver are not installed \
                       (apt-get install chromium chromium-driver)";

/// At most two browsers at once: each Chromium is a handful of processes, and the
/// test binary runs its tests in parallel on machines with two cores.
static BROWSERS: Semaphore = Semaphore::const_new(2);

/// The flags Chromium runs with. Headless, no sandbox (CI runs as root, where Chromium
/// refuses its sandbox), no GPU, no /dev/shm (small in containers), and none of the
/// background traffic (component updates, sync, QUIC probes, field trials) that would
/// otherwise flood a closed network with connection attempts.
const CHROMIUM_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// A headless Chromium session, and the chromedriver it runs under.
pub struct Browser {
    client: Client,
    /// chromedriver, the leader of its own process group, which Chromium's processes join.
    driver: Child,
    /// Chromium's profile and chromedriver's output; removed after both are gone.
    _dir: TempDir,
    /// Chromium's crash handlers: they start sessions of their own, out of the group.
    crash_handlers: Vec<libc::pid_t>,
    _permit: SemaphorePermit<'static>,
}

/// Where Chromium and chromedriver are: `CHROMIUM` and `CHROMEDRIVER` if set, else
/// Debian's paths. `None` when either file is missing.
fn executables() -> Option<(PathBuf, PathBuf)> {
    let path = |var: &str, default: &str| {
        let path = PathBuf::from(std::env::var_os(var).unwrap_or_else(|| default.into()));
        path.is_file().then_some(path)
    };
    let chromium = path("CHROMIUM", "/usr/bin/chromium");
    let driver = path("CHROMEDRIVER", "/usr/bin/chromedriver");
    chromium.zip(driver)
}

impl Browser {
    /// Starts chromedriver and a Chromium session at the desktop size ([`DESKTOP`]).
    ///
    /// `None` when Chromium or chromedriver is not installed: the test then returns
    /// (`let Some(browser) = Browser::start().await else { return };`), and the test
    /// binary prints one line saying it skipped the browser tests. With
    /// `GATEBOT_BROWSER_TESTS=require` a missing browser fails the test instead.
    pub async fn start() -> Option<Browser> {
        let Some((chromium, chromedriver)) = executables() else {
            if std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "require") {
                panic!(
                    "{REQUIRE_VAR}=require, but Chromium or chromedriver is missing \
                     (CHROMIUM={:?}, CHROMEDRIVER={:?}; apt-get install chromium chromium-driver)",
                    std::env::var_os("CHROMIUM").unwrap_or("/usr/bin/chromium".into()),
                    std::env::var_os("CHROMEDRIVER").unwrap_or("/usr/bin/chromedriver".into()),
                );
            }
            // Straight to stderr: the test harness captures `eprintln!` in tests.
            static SAY_ONCE: Once = Once::new();
            SAY_ONCE.call_once(|| {
                let _ = writeln!(std::io::stderr(), "{SKIPPED}");
            });
            return None;
        };
        let permit = BROWSERS
            .acquire()
            .await
            .expect("the semaphore is never closed");
        become_reaper();
        let started = Instant::now();
        let dir = tempfile::Builder::new()
            .prefix("gatebot-browser-")
            .tempdir()
            .unwrap();
        let port = crate::ports::free_port().port();
        let log = std::fs::File::create(dir.path().join("chromedriver.log")).unwrap();
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            // Chromium's settings, caches and crash reports go into the temporary
            // directory too, not into the home directory of whoever runs the tests.
            .env("HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            // Its own process group: on drop, one kill reaches chromedriver and every
            // Chromium process it started.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromedriver.display()));
        // From here on a panic drops the half-built browser, which kills the group.
        let mut starting = Starting {
            driver: Some(driver),
            dir: Some(dir),
        };
        let url = format!("http://127.0.0.1:{port}");
        starting.wait_until_ready(&url).await;
        let driver_ready = started.elapsed();

        let profile = starting.dir().join("profile");
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        args.push(format!("--window-size={},{}", DESKTOP.0, DESKTOP.1));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": chromium, "args": args },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&url)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "chromedriver could not start Chromium ({}): {e}\n{}",
                    chromium.display(),
                    starting.log()
                )
            });
        eprintln!(
            "browser: chromedriver answered in {} ms, Chromium's session opened {} ms later",
            driver_ready.as_millis(),
            (started.elapsed() - driver_ready).as_millis()
        );
        // The crash handlers name their database, in `dir` (XDG_CONFIG_HOME): found
        // while they live, as a zombie has no command line.
        let handlers = crash_handlers(starting.dir());
        let (driver, dir) = starting.done();
        Some(Browser {
            client,
            driver,
            _dir: dir,
            crash_handlers: handlers,
            _permit: permit,
        })
    }

    /// The WebDriver client, for what the helpers here do not cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Opens `url` and waits until it has loaded (`document.readyState` is `complete`).
    ///
    /// WebDriver's own wait is not enough: chromedriver 148 sometimes answers while the
    /// new document is still `loading`, its body not yet parsed.
    pub async fn goto(&self, url: &str) {
        if let Err(e) = self.client.goto(url).await {
            panic!("cannot open {url}: {e}");
        }
        let deadline = Instant::now() + WAIT;
        loop {
            // An error is a document going away under the script: the next one is coming.
            let state = self
                .client
                .execute("return document.readyState;", vec![])
                .await;
            if state.as_ref().is_ok_and(|s| s == "complete") {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "{url} did not finish loading within {WAIT:?} (document.readyState: {state:?}){}",
                    self.whereabouts().await
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The current page's URL.
    pub async fn url(&self) -> String {
        self.client
            .current_url()
            .await
            .map(String::from)
            .unwrap_or_else(|e| format!("(no URL: {e})"))
    }

    /// The element `css` selects (the first of them); panics if there is none.
    pub async fn find(&self, css: &str) -> Element {
        match self.client.find(Locator::Css(css)).await {
            Ok(element) => element,
            Err(e) => panic!("no element `{css}` ({e}){}", self.whereabouts().await),
        }
    }

    /// Every element `css` selects, in document order (none is not an error).
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        match self.client.find_all(Locator::Css(css)).await {
            Ok(elements) => elements,
            Err(e) => panic!("cannot look for `{css}`: {e}{}", self.whereabouts().await),
        }
    }

    /// Whether `css` selects anything now.
    pub async fn exists(&self, css: &str) -> bool {
        !self.find_all(css).await.is_empty()
    }

    /// The rendered text of the element `css` selects (as the user sees it: hidden
    /// parts left out).
    pub async fn text(&self, css: &str) -> String {
        let element = self.find(css).await;
        match element.text().await {
            Ok(text) => text,
            Err(e) => panic!(
                "cannot read the text of `{css}`: {e}{}",
                self.whereabouts().await
            ),
        }
    }

    /// An attribute of the element `css` selects (`None` when it has none).
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        let element = self.find(css).await;
        match element.attr(name).await {
            Ok(value) => value,
            Err(e) => panic!(
                "cannot read `{css}`'s {name}: {e}{}",
                self.whereabouts().await
            ),
        }
    }

    /// Clicks the element `css` selects, as a user would (it must be visible). When the
    /// click loads another page, [`wait_for`](Self::wait_for) something that page shows.
    pub async fn click(&self, css: &str) {
        let element = self.find(css).await;
        if let Err(e) = element.click().await {
            panic!("cannot click `{css}`: {e}{}", self.whereabouts().await);
        }
    }

    /// Types `text` into the element `css` selects (a field or text area), after what it
    /// holds already.
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        if let Err(e) = element.send_keys(text).await {
            panic!("cannot type into `{css}`: {e}{}", self.whereabouts().await);
        }
    }

    /// Presses and releases one key on the page, as a keyboard shortcut is pressed:
    /// it goes to whatever has the focus (the page itself when nothing does).
    /// `key` is a character (`'j'`) or a [`fantoccini::key::Key`] (`Key::Escape`).
    pub async fn press(&self, key: impl Into<char>) {
        let key = key.into();
        let keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key });
        if let Err(e) = self.client.perform_actions(keys).await {
            panic!("cannot press {key:?}: {e}{}", self.whereabouts().await);
        }
    }

    /// The value of a JavaScript expression, evaluated in the page (`undefined` comes
    /// back as `null`; ask `typeof x` to tell them apart). The page's
    /// Content-Security-Policy does not apply to it: WebDriver's scripts are the
    /// browser's, not the page's.
    pub async fn eval(&self, expression: &str) -> Value {
        let script = format!("return ({expression});");
        match self.client.execute(&script, vec![]).await {
            Ok(value) => value,
            Err(e) => panic!(
                "cannot evaluate `{expression}`: {e}{}",
                self.whereabouts().await
            ),
        }
    }

    /// Waits until `css` selects something, and returns the first element it selects.
    pub async fn wait_for(&self, css: &str, timeout: Duration) -> Element {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(element) = self.find_all(css).await.into_iter().next() {
                return element;
            }
            if Instant::now() >= deadline {
                panic!(
                    "timed out after {timeout:?} waiting for `{css}` to appear{}",
                    self.whereabouts().await
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `css` selects nothing.
    pub async fn wait_until_gone(&self, css: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.exists(css).await {
            if Instant::now() >= deadline {
                panic!(
                    "timed out after {timeout:?} waiting for `{css}` to go away{}",
                    self.whereabouts().await
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until a JavaScript expression is truthy in the page, and returns its value
    /// (an expression that throws fails at once: `window.x && window.x.y`, not `x.y`).
    pub async fn wait_until(&self, expression: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let value = self.eval(expression).await;
            let truthy = match &value {
                Value::Null | Value::Bool(false) => false,
                Value::String(s) => !s.is_empty(),
                Value::Number(n) => n.as_f64() != Some(0.0),
                _ => true,
            };
            if truthy {
                return value;
            }
            if Instant::now() >= deadline {
                panic!(
                    "timed out after {timeout:?} waiting for `{expression}` (last: {value}){}",
                    self.whereabouts().await
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Makes the page's viewport `width` × `height` CSS pixels ([`PHONE`], [`DESKTOP`]),
    /// at one device pixel per CSS pixel, for this page and the next ones.
    ///
    /// Through DevTools' device metrics, not WebDriver's window size: headless Chromium
    /// keeps windows at least 500 px wide, wider than a phone. The page is laid out as
    /// in a desktop browser that narrow (media queries see the width; the viewport
    /// `<meta>` and touch are not emulated).
    pub async fn set_window_size(&self, width: u32, height: u32) {
        let metrics = json!({
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false,
        });
        self.devtools("Emulation.setDeviceMetricsOverride", metrics)
            .await;
        let inner = self.eval("[window.innerWidth, window.innerHeight]").await;
        assert_eq!(
            inner,
            json!([width, height]),
            "the viewport did not take the size asked for{}",
            self.whereabouts().await
        );
    }

    /// Runs a DevTools protocol command in the page's tab (chromedriver's
    /// `goog/cdp/execute`), and returns its result.
    pub async fn devtools(&self, command: &str, params: Value) -> Value {
        let cmd = Devtools {
            command: command.to_string(),
            params,
        };
        match self.client.issue_cmd(cmd).await {
            Ok(value) => value,
            Err(e) => panic!(
                "DevTools' {command} failed: {e}{}",
                self.whereabouts().await
            ),
        }
    }

    /// What makes the page wider than the viewport, if anything: the page's and the
    /// viewport's widths, and the first elements that stick out on the right.
    pub async fn horizontal_overflow(&self) -> Option<String> {
        let found = self
            .eval(
                r##"(() => {
                    const page = document.documentElement.scrollWidth, view = window.innerWidth;
                    if (page <= view) return null;
                    const name = e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "")
                        + [...e.classList].map(c => "." + c).join("");
                    // What reaches past the viewport: a box, or the content it lets
                    // overflow (a scrolling box keeps its content to itself).
                    const past = e => {
                        const box = e.getBoundingClientRect();
                        const spills = getComputedStyle(e).overflowX === "visible";
                        return box.left + (spills ? Math.max(box.width, e.scrollWidth) : box.width) > view + 0.5;
                    };
                    const all = [...document.body.querySelectorAll("*")].filter(past);
                    const wide = all.filter(e => !all.some(d => d !== e && e.contains(d)))
                        .slice(0, 5)
                        .map(name);
                    return "the page is " + page + " px wide in a " + view + " px viewport; "
                        + "reaching past it: " + (wide.join(", ") || "(none found)");
                })()"##,
            )
            .await;
        found.as_str().map(String::from)
    }

    /// Fails if the page scrolls sideways at the current window size.
    pub async fn assert_no_horizontal_scroll(&self) {
        if let Some(overflow) = self.horizontal_overflow().await {
            panic!("horizontal scroll: {overflow}{}", self.whereabouts().await);
        }
    }

    /// Writes a PNG of the viewport to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let png = match self.client.screenshot().await {
            Ok(png) => png,
            Err(e) => panic!("cannot take a screenshot: {e}{}", self.whereabouts().await),
        };
        if let Err(e) = std::fs::write(path, png) {
            panic!("cannot write the screenshot to {}: {e}", path.display());
        }
    }

    /// Every cookie of the current page, with the flags the server set (`http_only()`,
    /// `same_site()`, `secure()`), which scripts in the page cannot see.
    pub async fn cookies(&self) -> Vec<Cookie<'static>> {
        match self.client.get_all_cookies().await {
            Ok(cookies) => cookies,
            Err(e) => panic!("cannot read the cookies: {e}{}", self.whereabouts().await),
        }
    }

    /// The current page's cookie named `name`, if it has one.
    pub async fn cookie(&self, name: &str) -> Option<Cookie<'static>> {
        self.cookies().await.into_iter().find(|c| c.name() == name)
    }

    /// Every process of this browser's: chromedriver's process group and the crash
    /// handlers (for checking that none outlives the `Browser`).
    pub fn processes(&self) -> (libc::pid_t, Vec<libc::pid_t>) {
        (self.driver.id() as libc::pid_t, self.crash_handlers.clone())
    }

    /// Ends the WebDriver session cleanly (Chromium closes its windows), then stops
    /// everything as dropping does. Dropping alone is enough; this is only quieter.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }

    /// Where the browser is, for failure messages: the URL and the page's first lines.
    async fn whereabouts(&self) -> String {
        let url = self.url().await;
        let text = self
            .client
            .execute(
                "return document.body ? document.body.innerText : document.documentElement.outerHTML;",
                vec![],
            )
            .await
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        let mut excerpt: String = text.chars().take(600).collect();
        if excerpt.len() < text.len() {
            excerpt.push('…');
        }
        format!("\n  page: {url}\n  text: {excerpt:?}")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        stop(&mut self.driver, &self.crash_handlers);
    }
}

/// A DevTools command sent through chromedriver.
#[derive(Debug)]
struct Devtools {
    command: String,
    params: Value,
}

impl WebDriverCompatibleCommand for Devtools {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!(
            "session/{}/goog/cdp/execute",
            session.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (hyper::Method, Option<String>) {
        let body = json!({ "cmd": self.command, "params": self.params });
        (hyper::Method::POST, Some(body.to_string()))
    }
}

/// chromedriver started, its session not yet open: dropped (on a panic) it stops
/// chromedriver as a `Browser` would.
struct Starting {
    driver: Option<Child>,
    dir: Option<TempDir>,
}

impl Starting {
    fn dir(&self) -> &Path {
        self.dir.as_ref().unwrap().path()
    }

    /// What chromedriver (and Chromium through it) printed.
    fn log(&self) -> String {
        let log = std::fs::read_to_string(self.dir().join("chromedriver.log")).unwrap_or_default();
        format!("chromedriver's output:\n{log}")
    }

    /// Polls chromedriver's `/status` until it says it is ready.
    async fn wait_until_ready(&mut self, url: &str) {
        let http = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .build_http::<Empty<Bytes>>();
        let status: hyper::Uri = format!("{url}/status").parse().unwrap();
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(response) = http.get(status.clone()).await {
                let body = response.into_body().collect().await.map(|b| b.to_bytes());
                let ready = body
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                    .is_some_and(|v| v["value"]["ready"] == true);
                if ready {
                    return;
                }
            }
            if let Ok(Some(exit)) = self.driver.as_mut().unwrap().try_wait() {
                panic!(
                    "chromedriver exited ({exit}) before it was ready\n{}",
                    self.log()
                );
            }
            if Instant::now() >= deadline {
                panic!(
                    "chromedriver did not answer {status} within {WAIT:?}\n{}",
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn done(mut self) -> (Child, TempDir) {
        (self.driver.take().unwrap(), self.dir.take().unwrap())
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        let handlers = self.dir.as_ref().map(|d| crash_handlers(d.path()));
        if let (Some(driver), Some(handlers)) = (self.driver.as_mut(), handlers) {
            stop(driver, &handlers);
        }
    }
}

/// Kills chromedriver's process group (chromedriver and every Chromium process) and
/// Chromium's crash `handlers`, and reaps them all.
///
/// Chromium's processes are chromedriver's children and grandchildren: killed at once,
/// they are orphaned and handed to the nearest reaper. The test process is that reaper
/// ([`become_reaper`]), so it collects them here instead of leaving them as zombies
/// of a PID 1 that may not (a container's often does not).
fn stop(driver: &mut Child, handlers: &[libc::pid_t]) {
    let group = driver.id() as libc::pid_t;
    // SAFETY: kill(2) and waitpid(2) with a negative pid act on that process group;
    // chromedriver leads its own (process_group(0)), so every member is ours.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    loop {
        // A member is reaped only after its own children were handed to us, so when
        // none is left to wait for, none is left at all.
        let reaped = unsafe { libc::waitpid(-group, std::ptr::null_mut(), 0) };
        if reaped == -1 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
        {
            break;
        }
    }
    for &pid in handlers.iter().filter(|&&pid| is_our_child(pid)) {
        // SAFETY: signals and reaps one of this browser's processes, handed to us when
        // the process that started it exited (it may be a zombie already).
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
}

/// Chromium's crash handlers started for the profile in `dir`: they name their
/// database there (XDG_CONFIG_HOME).
fn crash_handlers(dir: &Path) -> Vec<libc::pid_t> {
    let mut needle = b"--database=".to_vec();
    needle.extend_from_slice(dir.as_os_str().as_encoded_bytes());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| line.windows(needle.len()).any(|w| w == needle))
        })
        .collect()
}

/// Whether `pid` is a child of this process (so that its id cannot have been reused
/// by someone else's process: only we can reap it).
fn is_our_child(pid: libc::pid_t) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // pid (comm) state ppid …: comm may hold spaces and parentheses, the rest does not.
    let ppid = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
    ppid == Some(std::process::id())
}

/// Makes this process the reaper of its orphaned descendants (`PR_SET_CHILD_SUBREAPER`).
fn become_reaper() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: prctl with an integer argument; it changes only this process's flag.
        let done = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        assert_eq!(
            done,
            0,
            "prctl(PR_SET_CHILD_SUBREAPER): {}",
            std::io::Error::last_os_error()
        );
    });
}
