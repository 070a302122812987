//! Addresses a platform writes to (`contacts`: a phone number, a WhatsApp id) and the
//! inbound messages it has handled (`inbound_seen`). A platform asks whether an inbound
//! message is new and, in the same transaction, notes that its sender just wrote
//! ([`Store::heard`]); it asks when someone last wrote (WhatsApp's 24-hour window) and
//! whether they asked for no more messages (SMS STOP) before it sends
//! ([`Store::contact`]).

use serde_json::json;

use super::audit::audit_tx;
use super::sql::params;
use super::{Result, Store};

/// What a platform knows of one address.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Contact {
    /// When they last wrote to gatebot (ms), if ever.
    pub last_inbound_at: Option<i64>,
    /// Whether they asked for no more messages (and have not asked again since).
    pub stopped: bool,
}

impl Store {
    /// An inbound message `message` (the provider's id) from `address` on `platform`, at
    /// `now`: `true` the first time it is seen, `false` for a repeat (a webhook delivered
    /// twice). Either way `address` is noted as having written at `now`.
    pub fn heard(&self, platform: &str, address: &str, message: &str, now: i64) -> Result<bool> {
        self.write(|tx| {
            let first = tx.execute(
                "INSERT INTO inbound_seen (platform, message, at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT DO NOTHING",
                params![platform, message, now],
            )? == 1;
            tx.execute(
                tx.dialect(
                    "INSERT INTO contacts (platform, address, last_inbound_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (platform, address) DO UPDATE SET last_inbound_at = \
                     max(coalesce(last_inbound_at, 0), excluded.last_inbound_at)",
                    "INSERT INTO contacts (platform, address, last_inbound_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (platform, address) DO UPDATE SET last_inbound_at = \
                     greatest(coalesce(contacts.last_inbound_at, 0), excluded.last_inbound_at)",
                ),
                params![platform, address, now],
            )?;
            Ok(first)
        })
    }

    /// What `platform` knows of `address` (nothing yet: the default).
    pub fn contact(&self, platform: &str, address: &str) -> Result<Contact> {
        Ok(self
            .writer(|c| {
                c.query_opt(
                    "SELECT last_inbound_at, stopped_at IS NOT NULL FROM contacts \
                     WHERE platform = ?1 AND address = ?2",
                    params![platform, address],
                    |r| {
                        Ok(Contact {
                            last_inbound_at: r.get(0)?,
                            stopped: r.get(1)?,
                        })
                    },
                )
            })?
            .unwrap_or_default())
    }

    /// Records that `address` asked for no more messages on `platform` (`stop`) or for
    /// them again, at `now`, in the audit trail too. `false`: nothing changed.
    pub fn set_stopped(&self, platform: &str, address: &str, stop: bool, now: i64) -> Result<bool> {
        self.write(|tx| {
            let changed = if stop {
                tx.execute(
                    "INSERT INTO contacts (platform, address, stopped_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (platform, address) DO UPDATE SET stopped_at = excluded.stopped_at \
                     WHERE contacts.stopped_at IS NULL",
                    params![platform, address, now],
                )?
            } else {
                tx.execute(
                    "UPDATE contacts SET stopped_at = NULL \
                     WHERE platform = ?1 AND address = ?2 AND stopped_at IS NOT NULL",
                    params![platform, address],
                )?
            } == 1;
            if changed {
                let event = if stop {
                    "contact_stopped"
                } else {
                    "contact_started"
                };
                audit_tx(
                    tx,
                    now,
                    None,
                    event,
                    Some(address),
                    None,
                    &json!({"platform": platform}),
                )?;
            }
            Ok(changed)
        })
    }

    /// Forgets the inbound messages seen more than `keep` ms before `now`. Returns how
    /// many.
    pub fn forget_inbound(&self, now: i64, keep: i64) -> Result<usize> {
        self.write(|tx| {
            tx.execute(
                "DELETE FROM inbound_seen WHERE at < ?1",
                params![now - keep],
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_new_once_and_its_sender_is_noted_each_time() {
        let s = Store::open_in_memory().unwrap();
        assert_eq!(s.contact("sms", "+1555").unwrap(), Contact::default());
        assert!(s.heard("sms", "+1555", "SM1", 1000).unwrap());
        assert!(!s.heard("sms", "+1555", "SM1", 2000).unwrap());
        assert_eq!(
            s.contact("sms", "+1555").unwrap().last_inbound_at,
            Some(2000)
        );
        // Another platform's id space is its own.
        assert!(s.heard("whatsapp", "+1555", "SM1", 3000).unwrap());
        assert_eq!(
            s.contact("sms", "+1555").unwrap().last_inbound_at,
            Some(2000)
        );
        // A late, older message does not move the window back.
        assert!(s.heard("sms", "+1555", "SM0", 500).unwrap());
        assert_eq!(
            s.contact("sms", "+1555").unwrap().last_inbound_at,
            Some(2000)
        );
        assert_eq!(s.forget_inbound(10_000, 8_500).unwrap(), 2);
        assert!(s.heard("sms", "+1555", "SM0", 10_000).unwrap());
    }

    #[test]
    fn stop_holds_until_start_and_each_change_is_audited_once() {
        let s = Store::open_in_memory().unwrap();
        assert!(s.set_stopped("sms", "+1555", true, 1).unwrap());
        assert!(!s.set_stopped("sms", "+1555", true, 2).unwrap());
        assert!(s.contact("sms", "+1555").unwrap().stopped);
        assert!(!s.contact("sms", "+1666").unwrap().stopped);
        s.heard("sms", "+1555", "SM1", 3).unwrap();
        assert!(s.contact("sms", "+1555").unwrap().stopped);
        assert!(s.set_stopped("sms", "+1555", false, 4).unwrap());
        assert!(!s.set_stopped("sms", "+1555", false, 5).unwrap());
        assert!(!s.contact("sms", "+1555").unwrap().stopped);
        let events: Vec<String> = s
            .read(|c| {
                c.query_map("SELECT event FROM audit ORDER BY seq", params![], |r| {
                    r.get(0)
                })
            })
            .unwrap();
        assert_eq!(events, ["contact_stopped", "contact_started"]);
    }
}
