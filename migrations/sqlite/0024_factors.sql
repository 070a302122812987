-- Second factors (docs/teams.md, step-up): a person's TOTP factors, the windows in which
-- a confirmed code lets them approve more without another, and their wrong codes.
CREATE TABLE factors (
    id           TEXT PRIMARY KEY,           -- a ULID
    person       TEXT NOT NULL,              -- a [people] name
    label        TEXT NOT NULL,              -- what the person calls it ("phone")
    secret       TEXT NOT NULL,              -- base32; readable by gatebot's account only
    created_at   INTEGER NOT NULL,           -- Unix milliseconds
    confirmed_at INTEGER,                    -- NULL: enrolment not finished (no first code yet)
    last_step    INTEGER NOT NULL DEFAULT 0  -- the last time step accepted: a code works once
);
CREATE INDEX factors_person ON factors (person);

-- A person's step-up window on one surface (`cli`, or `session:ID` on the dashboard):
-- until then, approving a request that needs a factor takes no new code. Each use moves
-- it on by the window's length.
CREATE TABLE step_up_windows (
    person  TEXT NOT NULL,
    surface TEXT NOT NULL,
    until   INTEGER NOT NULL,                -- Unix milliseconds
    PRIMARY KEY (person, surface)
) WITHOUT ROWID;

-- Wrong codes in a row, per person: past a few, codes are refused for a while.
CREATE TABLE step_up_failures (
    person  TEXT PRIMARY KEY,
    count   INTEGER NOT NULL,
    last_at INTEGER NOT NULL                 -- Unix milliseconds
) WITHOUT ROWID;

-- Whether a vote's person confirmed it with a second factor.
ALTER TABLE votes ADD COLUMN factor INTEGER NOT NULL DEFAULT 0 CHECK (factor IN (0, 1));

-- Where a sign-in link leads once used: a request's confirm page, for a step-up asked
-- for in a chat. NULL: the dashboard's front page.
ALTER TABLE dashboard_links ADD COLUMN next TEXT;
