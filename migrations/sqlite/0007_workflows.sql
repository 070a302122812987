-- Workflow check-ins (docs/workflows.md): runs, their events, the problems they
-- collected, and the check-ins where they paused for their owner.
--
-- 1. `runs`: one per workflow run, owned by its agent; `status` running → waiting ⇄
--    running → stopped | completed. The totals are what the global limits count.
-- 2. `run_events`: every event as evaluated, in order (`seq` from 1), with what it was
--    answered; an event's idempotency key returns that answer again.
-- 3. `run_issues`: the warnings and errors of the events; `check_in` is the check-in
--    that showed them (NULL: not shown yet), so "since the last check-in" is a query.
-- 4. `check_ins`: a run's check-ins; a waiting one is also a subject (kind 'checkin')
--    with cards in chats, and its deadline is kept here, so a restart keeps both.
CREATE TABLE runs (
    id              TEXT PRIMARY KEY,          -- a ULID
    short_id        TEXT NOT NULL UNIQUE,
    agent           TEXT NOT NULL,
    title           TEXT NOT NULL,
    workflow        TEXT,                      -- the kind of workflow, as the agent names it
    idempotency_key TEXT,
    status          TEXT NOT NULL CHECK (status IN ('running', 'waiting', 'stopped', 'completed')),
    phase           TEXT,                      -- of the last event
    step            TEXT,
    events          INTEGER NOT NULL DEFAULT 0,
    warnings        INTEGER NOT NULL DEFAULT 0, -- collected, over the run
    errors          INTEGER NOT NULL DEFAULT 0,
    dropped_warnings INTEGER NOT NULL DEFAULT 0, -- not collected (on_limit_reached = truncate)
    dropped_errors  INTEGER NOT NULL DEFAULT 0,
    check_in        TEXT,                      -- the waiting or latest check-in
    reason          TEXT,                      -- why it stopped, or the last answer
    stopped_by      TEXT CHECK (stopped_by IN ('tolerance', 'limit', 'owner', 'expiry')),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    finished_at     INTEGER,
    UNIQUE (agent, idempotency_key)
);
CREATE INDEX runs_by_status ON runs (status, id);
CREATE INDEX runs_by_agent ON runs (agent, id);

CREATE TABLE run_events (
    run_id          TEXT NOT NULL REFERENCES runs (id),
    seq             INTEGER NOT NULL,
    type            TEXT NOT NULL CHECK (type IN ('step_complete', 'phase_complete', 'workflow_complete')),
    phase           TEXT NOT NULL,
    step            TEXT,
    artifacts       TEXT NOT NULL,             -- JSON array of {name, url}
    handling        TEXT NOT NULL,             -- JSON {on_failure, on_warning}
    autonomy        TEXT NOT NULL,             -- JSON: the phase's settings as applied
    action          TEXT NOT NULL CHECK (action IN ('continue', 'wait', 'stop')),
    reason          TEXT,
    check_in        TEXT,
    truncated       TEXT NOT NULL,             -- JSON array of kinds no longer collected
    idempotency_key TEXT,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq),
    UNIQUE (run_id, idempotency_key)
);

CREATE TABLE run_issues (
    run_id    TEXT NOT NULL REFERENCES runs (id),
    seq       INTEGER NOT NULL,                -- the event's
    n         INTEGER NOT NULL,                -- its place in the event
    kind      TEXT NOT NULL CHECK (kind IN ('warning', 'error')),
    severity  TEXT NOT NULL CHECK (severity IN ('low', 'medium', 'high')),
    detected  INTEGER NOT NULL,                -- severity detected from the text
    text      TEXT NOT NULL,
    phase     TEXT NOT NULL,
    step      TEXT,
    exceeded  INTEGER NOT NULL,                -- beyond the phase's tolerance
    check_in  TEXT,                            -- the check-in that showed it
    PRIMARY KEY (run_id, seq, n)
);
CREATE INDEX run_issues_unreported ON run_issues (run_id) WHERE check_in IS NULL;
CREATE INDEX run_issues_by_check_in ON run_issues (check_in);

CREATE TABLE check_ins (
    id              TEXT PRIMARY KEY,          -- a ULID; the subject's id while it asks
    short_id        TEXT UNIQUE,               -- NULL for a report (it asks nothing)
    run_id          TEXT NOT NULL REFERENCES runs (id),
    seq             INTEGER NOT NULL,          -- the event that made it
    status          TEXT NOT NULL CHECK (status IN ('waiting', 'continued', 'stopped', 'expired', 'reported')),
    why             TEXT CHECK (why IN ('check_in', 'tolerance')),
    reason          TEXT NOT NULL,             -- the question, or the breach of tolerance
    warnings        INTEGER NOT NULL,          -- what it shows
    errors          INTEGER NOT NULL,
    decided_by      TEXT,
    decided_via     TEXT,
    decision_reason TEXT,
    ttl_ms          INTEGER,
    created_at      INTEGER NOT NULL,
    decided_at      INTEGER,
    expires_at      INTEGER
);
CREATE INDEX check_ins_waiting_deadline ON check_ins (expires_at) WHERE status = 'waiting';
CREATE INDEX check_ins_by_run ON check_ins (run_id, id);
