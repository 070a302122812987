-- Batches asked in chats ("approve all 3 from deployer"): the confirmation card lists
-- exactly the requests stored here, and its buttons name the row, so a confirmation
-- decides those requests and no others (none that arrived after it was shown), once,
-- in the chat it was shown in, before it expires.
CREATE TABLE chat_batches (
    id         TEXT PRIMARY KEY,                 -- a ULID, named by the card's buttons
    platform   TEXT NOT NULL,
    chat       TEXT NOT NULL,                    -- where the confirmation was shown
    agent      TEXT NOT NULL,
    approve    INTEGER NOT NULL,                 -- 1: approve, 0: deny
    reason     TEXT,                             -- a denial's reason, when typed with it
    requests   TEXT NOT NULL,                    -- JSON array of the request ids listed
    left_out   INTEGER NOT NULL,                 -- critical requests an approval left out
    asked_by   TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('open', 'done', 'cancelled')),
    ended_by   TEXT,
    ended_at   INTEGER,
    outcome    TEXT                              -- what the confirmer was told, once done
);
CREATE INDEX chat_batches_expiry ON chat_batches (expires_at);
