//! Telegram's limits on sending messages, kept on our side so a burst of answers and
//! prompts does not run into 429s: in one chat at most one message a second and 20 a
//! minute (10 a minute in a supergroup or channel), and 30 a second overall, the
//! limits teloxide's `Throttle` kept before. A chat Telegram answered 429 waits out
//! the `retry_after` before its next send.
//!
//! Only sends count: edits are paced per chat by delivery, and answers to button
//! presses are not limited by Telegram.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

const SECOND: Duration = Duration::from_secs(1);
const MINUTE: Duration = Duration::from_secs(60);
/// Messages in one chat per second, and per minute.
const PER_CHAT_SECOND: usize = 1;
const PER_CHAT_MINUTE: usize = 20;
/// Messages per minute in a supergroup or channel.
const PER_SUPERGROUP_MINUTE: usize = 10;
/// Messages per second, all chats together.
const OVERALL_SECOND: usize = 30;

/// Supergroups and channels have ids below -10¹² (`-100…`).
fn is_supergroup(chat: i64) -> bool {
    chat <= -1_000_000_000_000
}

#[derive(Debug, Default)]
struct Sent {
    /// (chat, when) of the sends of the last minute, oldest first.
    history: VecDeque<(i64, Instant)>,
    /// Chats that must not be sent to before a time (a 429's `retry_after`).
    held: HashMap<i64, Instant>,
}

/// The send limits; see the module docs.
#[derive(Debug, Default)]
pub struct Limits {
    sent: Mutex<Sent>,
}

impl Limits {
    fn lock(&self) -> std::sync::MutexGuard<'_, Sent> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until a message may be sent to `chat`, and counts it as sent.
    pub async fn send(&self, chat: i64) {
        loop {
            let at = {
                let mut sent = self.lock();
                let now = Instant::now();
                match sent.next_slot(chat, now) {
                    at if at <= now => {
                        sent.history.push_back((chat, now));
                        return;
                    }
                    at => at,
                }
            };
            tokio::time::sleep_until(at).await;
        }
    }

    /// Telegram answered a call in `chat` with 429: no sends there for `wait`.
    pub fn hold(&self, chat: i64, wait: Duration) {
        let until = Instant::now() + wait;
        let mut sent = self.lock();
        let held = sent.held.entry(chat).or_insert(until);
        *held = (*held).max(until);
    }
}

impl Sent {
    /// The earliest instant a send to `chat` keeps within every limit.
    fn next_slot(&mut self, chat: i64, now: Instant) -> Instant {
        while self
            .history
            .front()
            .is_some_and(|(_, t)| now.duration_since(*t) >= MINUTE)
        {
            self.history.pop_front();
        }
        self.held.retain(|_, until| *until > now);
        let mut at = self.held.get(&chat).copied().unwrap_or(now);
        // With `limit` sends already in the window, the next may go once the oldest
        // of the last `limit` has left it.
        let mut within = |window: Duration, limit: usize, sends: Vec<Instant>| {
            if sends.len() >= limit {
                at = at.max(sends[sends.len() - limit] + window);
            }
        };
        let here = |window: Duration| -> Vec<Instant> {
            self.history
                .iter()
                .filter(|(c, t)| *c == chat && now.duration_since(*t) < window)
                .map(|(_, t)| *t)
                .collect()
        };
        within(SECOND, PER_CHAT_SECOND, here(SECOND));
        let per_minute = if is_supergroup(chat) {
            PER_SUPERGROUP_MINUTE
        } else {
            PER_CHAT_MINUTE
        };
        within(MINUTE, per_minute, here(MINUTE));
        let overall: Vec<Instant> = self
            .history
            .iter()
            .filter(|(_, t)| now.duration_since(*t) < SECOND)
            .map(|(_, t)| *t)
            .collect();
        within(SECOND, OVERALL_SECOND, overall);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends `n` messages to `chat` as fast as the limits allow; the time each went.
    async fn burst(limits: &Limits, chat: i64, n: usize) -> Vec<Duration> {
        let start = Instant::now();
        let mut at = Vec::new();
        for _ in 0..n {
            limits.send(chat).await;
            at.push(start.elapsed());
        }
        at
    }

    #[tokio::test(start_paused = true)]
    async fn one_message_a_second_and_twenty_a_minute_in_a_chat() {
        let limits = Limits::default();
        let at = burst(&limits, 7, 22).await;
        assert_eq!(at[0], Duration::ZERO);
        assert_eq!(at[1], SECOND);
        assert_eq!(at[19], 19 * SECOND);
        // The 21st waits until the first has left the minute.
        assert_eq!(at[20], MINUTE);
        assert_eq!(at[21], MINUTE + SECOND);
        // Another chat is not held up by this one.
        let other = burst(&limits, 8, 1).await;
        assert_eq!(other, [Duration::ZERO]);
    }

    #[tokio::test(start_paused = true)]
    async fn ten_a_minute_in_a_supergroup() {
        let limits = Limits::default();
        let at = burst(&limits, -1_001_234_567_890, 11).await;
        assert_eq!(at[9], 9 * SECOND);
        assert_eq!(at[10], MINUTE);
    }

    #[tokio::test(start_paused = true)]
    async fn thirty_a_second_overall() {
        let limits = Limits::default();
        let start = Instant::now();
        for chat in 0..30 {
            limits.send(chat).await;
        }
        assert_eq!(start.elapsed(), Duration::ZERO);
        limits.send(30).await;
        assert_eq!(start.elapsed(), SECOND);
    }

    #[tokio::test(start_paused = true)]
    async fn a_chat_answered_429_waits_out_retry_after() {
        let limits = Limits::default();
        let start = Instant::now();
        limits.hold(7, Duration::from_secs(5));
        limits.send(8).await;
        assert_eq!(start.elapsed(), Duration::ZERO, "other chats go on");
        limits.send(7).await;
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        // A shorter hold does not cut a longer one short.
        limits.hold(9, Duration::from_secs(5));
        limits.hold(9, Duration::from_secs(1));
        limits.send(9).await;
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }
}
