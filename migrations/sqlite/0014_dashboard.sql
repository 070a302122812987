-- The web dashboard's sign-in: single-use links and server-side sessions.
-- Neither secret is stored: a link's and a session cookie's tokens are kept as their
-- SHA-256, so a copy of the database signs no one in. Times are Unix milliseconds.

CREATE TABLE dashboard_links (
    token_hash TEXT PRIMARY KEY,     -- hex SHA-256 of the link's token
    person     TEXT NOT NULL,        -- who it signs in
    via        TEXT NOT NULL,        -- where it was asked for: cli / telegram / slack
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER               -- set by the sign-in that used it up
);

CREATE TABLE dashboard_sessions (
    id           TEXT PRIMARY KEY,   -- 8 characters, for `gatebot dashboard revoke`
    token_hash   TEXT NOT NULL UNIQUE, -- hex SHA-256 of the cookie's token
    csrf         TEXT NOT NULL,      -- the token every form of the session carries
    person       TEXT NOT NULL,
    user_agent   TEXT,               -- what the browser said it is, cut
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,   -- created_at + session_max
    ended_at     INTEGER,            -- signed out or revoked
    ended_by     TEXT
);
CREATE INDEX dashboard_sessions_live ON dashboard_sessions (person) WHERE ended_at IS NULL;
