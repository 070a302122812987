//! Browser tests: pages driven in a real headless Chromium over WebDriver ([`harness`]).
//! Without Chromium and chromedriver (Debian's `chromium` and `chromium-driver`) every
//! test returns at once and the binary prints one line saying so;
//! `GATEBOT_BROWSER_TESTS=require` (set by `.ci/run`) makes that a failure instead.
//! `CHROMIUM` and `CHROMEDRIVER` name other paths than /usr/bin's.

mod agents;
mod daemon;
mod dashboard;
mod factors;
// The fake Telegram Bot API of the integration tests, to decide in "Telegram" while a
// page is open; this target uses only part of it.
#[allow(dead_code)]
#[path = "../it/fake_telegram.rs"]
mod fake_telegram;
mod harness;
mod history;
#[path = "../it/ports.rs"]
mod ports;
mod runs;
mod selftest;
mod tasks;
