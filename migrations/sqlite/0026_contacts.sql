-- What a platform that writes to addresses (a phone number, a WhatsApp id) knows of
-- each: when they last wrote to gatebot (WhatsApp reaches a person with a free-form
-- message only within 24 hours of their last one), and whether they asked for no more
-- messages (SMS STOP, until START). Replaces SMS's file beside the database.
CREATE TABLE contacts (
    platform        TEXT NOT NULL,
    address         TEXT NOT NULL,
    last_inbound_at INTEGER,                      -- ms; NULL: never wrote
    stopped_at      INTEGER,                      -- ms; NULL: messages go to them
    PRIMARY KEY (platform, address)
) WITHOUT ROWID;

-- Inbound messages a platform has handled, by the id its provider gave them, so a
-- webhook delivered twice (providers retry) is acted on once, across restarts. Kept a
-- week (housekeeping), longer than any provider retries.
CREATE TABLE inbound_seen (
    platform TEXT NOT NULL,
    message  TEXT NOT NULL,
    at       INTEGER NOT NULL,
    PRIMARY KEY (platform, message)
) WITHOUT ROWID;
CREATE INDEX inbound_seen_at ON inbound_seen (at);
