-- gatebot's schema for PostgreSQL (15 or newer): the end state of the 28 SQLite migrations
-- in `migrations/sqlite/`, written at once. A PostgreSQL database starts here, not at 0001
-- of SQLite: there is no old PostgreSQL database to upgrade. A later schema change is a new
-- file in both directories; `tests/it/postgres_schema.rs` checks that the two end up with the same
-- tables, columns, keys and indexes, and that the triggers behave the same.
--
-- The store applies it (src/store/pg.rs) when `[store] url` names a PostgreSQL database.
-- Everything below is the SQLite schema as it is, with these translations:
--
-- * Types. SQLite's INTEGER is 64-bit: always `bigint` here (PostgreSQL's `integer` is
--   32-bit, and times are Unix milliseconds). TEXT is `text`, REAL `double precision`.
-- * Yes/no columns stay `bigint` holding 0 or 1 (`approvals.checkpoint`, `subjects.open`,
--   `votes.approve`, `evidence_*.asked`, …), not `boolean`: the store writes and compares
--   them as numbers (`open = 1`, `SUM(asked)`), binds Rust bools to them (rusqlite writes
--   1 or 0) and reads some with rusqlite's bool getter, which takes any integer. Keeping
--   the numbers keeps one SQL text for both; the PostgreSQL side binds a bool as 0 or 1.
-- * JSON stays `text`, never `jsonb`: the store hashes and compares it as written (above
--   all `audit.detail`, which the hash chain covers byte for byte).
-- * Primary keys. A SQLite `TEXT PRIMARY KEY` column accepts NULL (an old SQLite quirk);
--   here a primary key column is NOT NULL, as the store always treats it.
-- * rowid. SQLite numbers every row of an ordinary table (`rowid`), in insertion order,
--   and the store uses it to keep things in the order they came (tasks, task questions,
--   subjects), to page (subjects, the history's requests) and to name one row (cards).
--   Those five tables get an explicit `rowid` column here, last, so the same SQL reads
--   it: an identity column (PostgreSQL numbers it; nothing may write it, except a copy
--   from SQLite with OVERRIDING SYSTEM VALUE and a setval after), unique, so paging by it
--   is an index scan as in SQLite.
--   In SQLite every index also ends with the rowid, so `tasks_queued (agent)` gives an
--   agent's queued tasks in rowid order for free; here it does not, and a query ordering
--   by rowid sorts what the index found (a handful of rows for these indexes).
-- * AUTOINCREMENT. `audit.seq` is a plain `bigint` key, with no sequence or identity:
--   the store will assign it as `audit_head.seq + 1` while holding the head row (locked
--   by the writer's transaction), so the numbers are gapless and in commit order. A
--   sequence is not transactional: a rolled-back append would leave a gap, which
--   `gatebot audit verify` reports as rows cut off. `audit_head.seq` is then also the
--   "highest seq ever issued" that SQLite keeps in `sqlite_sequence`.
--   `reminders.id` (SQLite: `INTEGER PRIMARY KEY`, numbered on insert and also written
--   back explicitly when a reminder is put back) is an identity column BY DEFAULT.
-- * WITHOUT ROWID has no meaning here and is dropped.
-- * Text. SQLite compares and sorts text byte by byte (BINARY); PostgreSQL by the
--   database's collation, which is the system locale's unless said (en_US.UTF-8 sorts
--   'a' before 'B', C the other way). The store orders by text ids and names, so its
--   database must be created with LC_COLLATE C (`CREATE DATABASE … LOCALE 'C'` or
--   `TEMPLATE template0 LC_COLLATE 'C'`), as the tests' cluster is.
-- * Triggers are plpgsql functions, one per trigger and named after it, with the same
--   messages; two more refuse TRUNCATE of the audit trail and its head, which SQLite
--   does not have. A refusal (RAISE EXCEPTION) ends the whole transaction here, where
--   SQLite's RAISE(ABORT) undoes only the statement; the store does not carry on in a
--   transaction after a failed statement, so both end the same.
-- * Not here: the history's full-text index (`approvals_search`, an FTS5 virtual table;
--   the four shadow tables it keeps the index in, `approvals_search_data`, `_idx`,
--   `_docsize` and `_config`; and the bookkeeping that keeps it in step,
--   `approvals_search_state`, `approvals_search_stale` and the trigger
--   `approvals_search_stale`). FTS5 is SQLite's own; on PostgreSQL the
--   history search will read `approvals` through a trigram index (pg_trgm, or a plain
--   scan where the extension cannot be created), which PostgreSQL keeps up to date
--   itself, so nothing needs keeping in step. It comes with the search's own SQL.

-- Requests (approvals), as submitted and decided. Timestamps are Unix milliseconds (UTC).
CREATE TABLE approvals (
    id                   text PRIMARY KEY,            -- ULID: sortable by creation
    short_id             text NOT NULL UNIQUE,        -- 8 chars, for typing in chat
    agent                text NOT NULL,
    tool                 text NOT NULL,
    args                 text NOT NULL,               -- JSON
    summary              text,
    confidence           double precision,
    environment          text,
    idempotency_key      text,
    status               text NOT NULL CHECK (status IN (
                             'pending', 'approved', 'rejected', 'expired', 'cancelled',
                             'executing', 'succeeded', 'failed', 'allowed', 'blocked')),
    risk_score           text NOT NULL,
    tool_class           text NOT NULL,
    risk_factors         text NOT NULL,               -- JSON array of factor names
    policy_reason        text NOT NULL,
    checkpoint           bigint NOT NULL DEFAULT 0,
    always_allow_offered bigint NOT NULL DEFAULT 0,
    decided_by           text,
    decided_via          text,                        -- telegram / slack / cli / api / system
    decision_reason      text,
    always_allowed       bigint NOT NULL DEFAULT 0,   -- approved with "Always allow"
    result_detail        text,
    ttl_ms               bigint,                      -- NULL: it did not ask a human
    created_at           bigint NOT NULL,
    decided_at           bigint,
    expires_at           bigint,
    finished_at          bigint,
    task_id              text,                        -- the task it was made in
    grant_id             text,                        -- the grant that let it through
    content_hash         text,                        -- of the body, for idempotency keys
    draft                text CHECK (draft IN ('open', 'discarded', 'handed')),
    draft_task           text,
    accepts_edits        bigint NOT NULL DEFAULT 0,
    edited_args          text,
    route                text,                        -- JSON; NULL: no rule, first answer decides
    cost                 double precision,
    reported_cost        double precision,
    spent_at             bigint,
    route_due_at         bigint,                      -- the next reminder or escalation
    low_confidence       bigint,                      -- 0/1; NULL: written before it existed
    rowid                bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    UNIQUE (agent, idempotency_key)
);
CREATE INDEX approvals_pending_deadline ON approvals (expires_at) WHERE status = 'pending';
CREATE INDEX approvals_agent_tool ON approvals (agent, tool, status);
CREATE INDEX approvals_task ON approvals (task_id) WHERE task_id IS NOT NULL;
CREATE INDEX approvals_open_drafts ON approvals (id) WHERE draft = 'open';
CREATE INDEX approvals_spend ON approvals (spent_at, agent, cost, reported_cost)
    WHERE spent_at IS NOT NULL;
CREATE INDEX approvals_route_due ON approvals (route_due_at) WHERE route_due_at IS NOT NULL;
CREATE INDEX approvals_decisions ON approvals (agent, decided_at, id)
    WHERE ttl_ms IS NOT NULL AND decided_at IS NOT NULL
      AND status IN ('approved', 'executing', 'succeeded', 'failed', 'rejected');
CREATE INDEX approvals_pending_agent ON approvals (agent) WHERE status = 'pending';

-- The audit trail: append-only, hash-chained (src/store/audit.rs, docs/audit.md).
CREATE TABLE audit (
    seq         bigint PRIMARY KEY,                   -- audit_head.seq + 1 (see the top)
    at          bigint NOT NULL,
    approval_id text,
    event       text NOT NULL,
    actor       text,
    channel     text,
    detail      text,                                 -- JSON object, hashed as written
    prev_hash   text,
    hash        text
);
CREATE INDEX audit_approval ON audit (approval_id);

-- The chain's head: the last row's seq and hash and how many rows the trail holds. A
-- trigger moves it with every append, so rows cut off the end show in `audit verify`.
-- `legacy_rows` rows up to seq `legacy_through` came before the chain (none here).
CREATE TABLE audit_head (
    id             bigint PRIMARY KEY CHECK (id = 1),
    seq            bigint NOT NULL,
    hash           text,
    rows           bigint NOT NULL,
    legacy_rows    bigint NOT NULL,
    legacy_through bigint NOT NULL
);
INSERT INTO audit_head (id, seq, hash, rows, legacy_rows, legacy_through)
VALUES (1, 0, NULL, 0, 0, 0);

CREATE FUNCTION audit_is_append_only_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit trail is append-only';
END $$;
CREATE TRIGGER audit_is_append_only_update BEFORE UPDATE ON audit
FOR EACH ROW EXECUTE FUNCTION audit_is_append_only_update();

CREATE FUNCTION audit_is_append_only_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit trail is append-only';
END $$;
CREATE TRIGGER audit_is_append_only_delete BEFORE DELETE ON audit
FOR EACH ROW EXECUTE FUNCTION audit_is_append_only_delete();

-- SQLite has no TRUNCATE (its DELETE without WHERE runs the row trigger above);
-- PostgreSQL's TRUNCATE runs no row trigger, so it gets a refusal of its own.
CREATE FUNCTION audit_is_append_only_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit trail is append-only';
END $$;
CREATE TRIGGER audit_is_append_only_truncate BEFORE TRUNCATE ON audit
FOR EACH STATEMENT EXECUTE FUNCTION audit_is_append_only_truncate();

CREATE FUNCTION audit_head_follows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE audit_head SET seq = NEW.seq, hash = NEW.hash, rows = rows + 1 WHERE id = 1;
    RETURN NULL;
END $$;
CREATE TRIGGER audit_head_follows AFTER INSERT ON audit
FOR EACH ROW EXECUTE FUNCTION audit_head_follows();

-- Its row count only grows, one row per append. (Its seq may go back, as in SQLite.)
CREATE FUNCTION audit_head_counts_every_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit head moves one row at a time';
END $$;
CREATE TRIGGER audit_head_counts_every_row BEFORE UPDATE ON audit_head
FOR EACH ROW
WHEN (NEW.id <> OLD.id OR NEW.rows <> OLD.rows + 1
      OR NEW.legacy_rows <> OLD.legacy_rows OR NEW.legacy_through <> OLD.legacy_through)
EXECUTE FUNCTION audit_head_counts_every_row();

CREATE FUNCTION audit_head_is_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit head is kept';
END $$;
CREATE TRIGGER audit_head_is_kept BEFORE DELETE ON audit_head
FOR EACH ROW EXECUTE FUNCTION audit_head_is_kept();
CREATE FUNCTION audit_head_is_kept_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit head is kept';
END $$;
CREATE TRIGGER audit_head_is_kept_truncate BEFORE TRUNCATE ON audit_head
FOR EACH STATEMENT EXECUTE FUNCTION audit_head_is_kept_truncate();

-- Digests standing for several requests in a chat.
CREATE TABLE digests (
    platform  text NOT NULL,
    chat      text NOT NULL,
    message   text NOT NULL,
    showing   text REFERENCES approvals (id),   -- the request under review; NULL: the summary
    closed    bigint NOT NULL DEFAULT 0,        -- 1 once it shows the final tally
    posted_at bigint NOT NULL,
    PRIMARY KEY (platform, chat, message)
);

-- Everything shown in chats with cards of its own, of every kind.
CREATE TABLE subjects (
    id            text PRIMARY KEY,            -- a ULID, unique across kinds
    kind          text NOT NULL,
    short_id      text NOT NULL UNIQUE,        -- for typing, like a request's
    open          bigint NOT NULL,             -- 1 while it waits for people
    revision      text NOT NULL,               -- e.g. the request's status
    created_at    bigint NOT NULL,
    home_platform text,
    home_chat     text,
    home_reply_to text,
    home_root     text,
    parent        text,
    rowid         bigint GENERATED ALWAYS AS IDENTITY UNIQUE
);
CREATE INDEX subjects_open ON subjects (id) WHERE open = 1;
CREATE INDEX subjects_home ON subjects (home_platform, home_chat) WHERE home_platform IS NOT NULL;
CREATE INDEX subjects_root ON subjects (home_platform, home_chat, home_root)
    WHERE home_root IS NOT NULL;

-- Which message in which chat shows which subject.
CREATE TABLE cards (
    subject    text NOT NULL,
    platform   text NOT NULL,
    chat       text NOT NULL,
    message    text,                         -- NULL: the post is in flight
    shown_by   text NOT NULL CHECK (shown_by IN ('card', 'digest')),
    revision   text NOT NULL,                -- the subject's revision the message shows
    posted_at  bigint NOT NULL,
    thread     text,
    outcome_at bigint,
    rowid      bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    PRIMARY KEY (subject, platform, chat)
);
CREATE INDEX cards_by_message ON cards (platform, chat, message);

-- Questions gatebot asked in chats, by the message that asks them.
CREATE TABLE questions (
    platform text NOT NULL,
    chat     text NOT NULL,
    message  text NOT NULL,                 -- the question's message id
    subject  text NOT NULL,
    purpose  text NOT NULL,                 -- 'deny_reason'
    asked_at bigint NOT NULL,
    PRIMARY KEY (platform, chat, message)
);

-- Refused attempts, coalesced per window before they reach the trail.
CREATE TABLE refusal_windows (
    key         text PRIMARY KEY,  -- JSON: actor, kind, channel, transport, reason
    approval_id text,              -- the first attempt's, for the closing row
    actor       text NOT NULL,
    channel     text NOT NULL,
    detail      text NOT NULL,     -- the first attempt's audit detail (JSON)
    first_seq   bigint NOT NULL,   -- the first attempt's audit row
    started     bigint NOT NULL,   -- when the first attempt came (ms)
    last_at     bigint NOT NULL,   -- when the latest came
    repeats     bigint NOT NULL    -- attempts after the first, not yet in the trail
);

-- Workflow runs, their events, the problems they collected, their check-ins.
CREATE TABLE runs (
    id               text PRIMARY KEY,          -- a ULID
    short_id         text NOT NULL UNIQUE,
    agent            text NOT NULL,
    title            text NOT NULL,
    workflow         text,
    idempotency_key  text,
    status           text NOT NULL CHECK (status IN ('running', 'waiting', 'stopped', 'completed')),
    phase            text,
    step             text,
    events           bigint NOT NULL DEFAULT 0,
    warnings         bigint NOT NULL DEFAULT 0,
    errors           bigint NOT NULL DEFAULT 0,
    dropped_warnings bigint NOT NULL DEFAULT 0,
    dropped_errors   bigint NOT NULL DEFAULT 0,
    check_in         text,
    reason           text,
    stopped_by       text CHECK (stopped_by IN ('tolerance', 'limit', 'owner', 'expiry')),
    created_at       bigint NOT NULL,
    updated_at       bigint NOT NULL,
    finished_at      bigint,
    UNIQUE (agent, idempotency_key)
);
CREATE INDEX runs_by_status ON runs (status, id);
CREATE INDEX runs_by_agent ON runs (agent, id);

CREATE TABLE run_events (
    run_id          text NOT NULL REFERENCES runs (id),
    seq             bigint NOT NULL,
    type            text NOT NULL CHECK (type IN ('step_complete', 'phase_complete', 'workflow_complete')),
    phase           text NOT NULL,
    step            text,
    artifacts       text NOT NULL,             -- JSON array of {name, url}
    handling        text NOT NULL,             -- JSON {on_failure, on_warning}
    autonomy        text NOT NULL,             -- JSON: the phase's settings as applied
    action          text NOT NULL CHECK (action IN ('continue', 'wait', 'stop')),
    reason          text,
    check_in        text,
    truncated       text NOT NULL,             -- JSON array of kinds no longer collected
    idempotency_key text,
    created_at      bigint NOT NULL,
    content_hash    text,
    PRIMARY KEY (run_id, seq),
    UNIQUE (run_id, idempotency_key)
);

CREATE TABLE run_issues (
    run_id    text NOT NULL REFERENCES runs (id),
    seq       bigint NOT NULL,                 -- the event's
    n         bigint NOT NULL,                 -- its place in the event
    kind      text NOT NULL CHECK (kind IN ('warning', 'error')),
    severity  text NOT NULL CHECK (severity IN ('low', 'medium', 'high')),
    detected  bigint NOT NULL,                 -- severity detected from the text
    text      text NOT NULL,
    phase     text NOT NULL,
    step      text,
    exceeded  bigint NOT NULL,                 -- beyond the phase's tolerance
    check_in  text,                            -- the check-in that showed it
    PRIMARY KEY (run_id, seq, n)
);
CREATE INDEX run_issues_unreported ON run_issues (run_id) WHERE check_in IS NULL;
CREATE INDEX run_issues_by_check_in ON run_issues (check_in);

CREATE TABLE check_ins (
    id              text PRIMARY KEY,          -- a ULID; the subject's id while it asks
    short_id        text UNIQUE,               -- NULL for a report (it asks nothing)
    run_id          text NOT NULL REFERENCES runs (id),
    seq             bigint NOT NULL,           -- the event that made it
    status          text NOT NULL CHECK (status IN ('waiting', 'continued', 'stopped', 'expired', 'reported')),
    why             text CHECK (why IN ('check_in', 'tolerance')),
    reason          text NOT NULL,
    warnings        bigint NOT NULL,
    errors          bigint NOT NULL,
    decided_by      text,
    decided_via     text,
    decision_reason text,
    ttl_ms          bigint,
    created_at      bigint NOT NULL,
    decided_at      bigint,
    expires_at      bigint
);
CREATE INDEX check_ins_waiting_deadline ON check_ins (expires_at) WHERE status = 'waiting';
CREATE INDEX check_ins_by_run ON check_ins (run_id, id);

-- Trust: tier overrides, pauses, grants and what prompts offer, proposals.
CREATE TABLE tier_overrides (
    agent    text PRIMARY KEY,
    tier     text NOT NULL CHECK (tier IN ('draft_only', 'supervised', 'semi_autonomous', 'autonomous')),
    set_by   text NOT NULL,
    set_via  text NOT NULL,
    reason   text,
    set_at   bigint NOT NULL,
    proposal text                                -- the approved proposal that set it, if any
);

CREATE TABLE pauses (
    agent      text PRIMARY KEY,
    id         text NOT NULL UNIQUE,             -- a ULID
    paused_by  text NOT NULL,
    paused_via text NOT NULL,
    reason     text,
    paused_at  bigint NOT NULL
);

CREATE TABLE grant_offers (
    approval_id text PRIMARY KEY REFERENCES approvals (id),
    command     text,                            -- a shell-like tool's exact command
    prefix      text,                            -- the prefix offered for it, if any
    suggest     text CHECK (suggest IN ('tool', 'exact', 'prefix')),
    streak      bigint NOT NULL DEFAULT 0        -- approvals in a row behind the suggestion
);

CREATE TABLE proposals (
    id              text PRIMARY KEY,            -- a ULID, also its subject id
    short_id        text NOT NULL UNIQUE,
    agent           text NOT NULL,
    direction       text NOT NULL CHECK (direction IN ('promote', 'demote')),
    from_tier       text NOT NULL,
    to_tier         text NOT NULL,
    reason          text NOT NULL,
    measures        text NOT NULL,               -- JSON: the figures behind it
    status          text NOT NULL CHECK (status IN ('open', 'approved', 'declined', 'superseded')),
    created_at      bigint NOT NULL,
    decided_by      text,
    decided_via     text,
    decided_at      bigint,
    decision_reason text
);
CREATE UNIQUE INDEX proposals_open ON proposals (agent) WHERE status = 'open';
CREATE INDEX proposals_by_agent ON proposals (agent, status, decided_at);

CREATE TABLE agent_handles (
    id    text PRIMARY KEY,                      -- a ULID
    agent text NOT NULL UNIQUE
);

CREATE TABLE trust_state (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- The inbox: tasks owners hand to agents, and the questions they wait on.
CREATE TABLE tasks (
    id              text PRIMARY KEY,           -- a ULID, also the subject's id
    short_id        text NOT NULL UNIQUE,       -- the subject's short id
    status          text NOT NULL CHECK (status IN ('pending', 'queued', 'running', 'waiting',
                        'completed', 'failed', 'rejected', 'cancelled')),
    intent          text NOT NULL,
    summary         text NOT NULL,
    prompt          text NOT NULL,              -- the execution prompt
    level           bigint NOT NULL,            -- 1 the owner confirms first, 2 queued at once
    classifier      text NOT NULL,              -- 'keywords' or 'model'
    agent           text NOT NULL,
    text            text NOT NULL,              -- the owner's words
    clarification   text,
    created_by      text NOT NULL,
    created_via     text NOT NULL,
    decided_by      text,
    attempts        bigint NOT NULL DEFAULT 0,  -- claims in this run
    lapses          bigint NOT NULL DEFAULT 0,  -- leases that lapsed in this run
    lease           text,                       -- the running worker's lease
    lease_until     bigint,
    deadline        bigint,                     -- the run's timeout, grace included
    progress        text,
    progress_at     bigint,
    revision        bigint NOT NULL DEFAULT 0,  -- moves whenever what its card shows changes
    shown_at        bigint NOT NULL DEFAULT 0,  -- when the revision last moved
    progress_due    bigint,                     -- progress not on the card yet: due then
    result          text,
    error           text,
    cost_usd        double precision,
    session_id      text,
    input           text,                       -- the owner's answer, for the next claim
    input_questions text,                       -- JSON: what that answer answers
    created_at      bigint NOT NULL,
    updated_at      bigint NOT NULL,
    started_at      bigint,
    finished_at     bigint,
    suggestion      text,
    rowid           bigint GENERATED ALWAYS AS IDENTITY UNIQUE
);
CREATE INDEX tasks_queued ON tasks (agent) WHERE status = 'queued';
CREATE INDEX tasks_running ON tasks (agent) WHERE status = 'running';
CREATE INDEX tasks_open ON tasks (status) WHERE status IN ('pending', 'queued', 'running', 'waiting');
CREATE INDEX tasks_progress_due ON tasks (progress_due) WHERE progress_due IS NOT NULL;
CREATE INDEX tasks_spend ON tasks (finished_at, agent, cost_usd) WHERE cost_usd IS NOT NULL;

CREATE TABLE task_questions (
    id           text PRIMARY KEY,              -- a ULID, also the subject's id
    task         text NOT NULL REFERENCES tasks (id),
    purpose      text NOT NULL CHECK (purpose IN ('clarify', 'input')),
    questions    text NOT NULL,                 -- JSON array of strings
    choices      text NOT NULL DEFAULT '[]',    -- JSON array of strings
    state        text NOT NULL CHECK (state IN ('open', 'answered', 'dropped')),
    answer       text,
    answered_by  text,
    answered_via text,
    asked_at     bigint NOT NULL,
    answered_at  bigint,
    rowid        bigint GENERATED ALWAYS AS IDENTITY UNIQUE
);
CREATE INDEX task_questions_by_task ON task_questions (task, state);

-- The web dashboard's sign-in: single-use links and sessions (tokens kept as SHA-256).
CREATE TABLE dashboard_links (
    token_hash text PRIMARY KEY,     -- hex SHA-256 of the link's token
    person     text NOT NULL,        -- who it signs in
    via        text NOT NULL,        -- where it was asked for
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    used_at    bigint,               -- set by the sign-in that used it up
    identity   text,
    next       text
);

CREATE TABLE dashboard_sessions (
    id           text PRIMARY KEY,   -- 8 characters, for `gatebot dashboard revoke`
    token_hash   text NOT NULL UNIQUE, -- hex SHA-256 of the cookie's token
    csrf         text NOT NULL,      -- the token every form of the session carries
    person       text NOT NULL,
    user_agent   text,
    created_at   bigint NOT NULL,
    last_seen_at bigint NOT NULL,
    expires_at   bigint NOT NULL,    -- created_at + session_max
    ended_at     bigint,             -- signed out or revoked
    ended_by     text,
    identity     text
);
CREATE INDEX dashboard_sessions_live ON dashboard_sessions (person) WHERE ended_at IS NULL;

-- Grants: what an owner let an agent do without asking.
CREATE TABLE grants (
    id          text PRIMARY KEY,
    short_id    text NOT NULL UNIQUE,
    agent       text NOT NULL,
    tool        text NOT NULL,
    scope       text NOT NULL CHECK (scope IN ('tool', 'exact', 'prefix', 'call')),
    pattern     text,                            -- the command or prefix; NULL for 'tool'
    granted_by  text NOT NULL,
    granted_via text NOT NULL,
    reason      text,
    approval_id text,                            -- the request whose decision made it
    created_at  bigint NOT NULL,
    expires_at  bigint,                          -- NULL: until revoked
    revoked_at  bigint,
    revoked_by  text,
    revoked_via text,
    max_risk    text NOT NULL DEFAULT 'high' CHECK (max_risk IN ('low', 'medium', 'high')),
    uses_left   bigint CHECK (uses_left IS NULL OR uses_left >= 0),
    CHECK ((scope = 'tool') = (pattern IS NULL))
);
CREATE INDEX grants_in_force ON grants (agent, tool) WHERE revoked_at IS NULL;
CREATE INDEX grants_by_approval ON grants (approval_id) WHERE approval_id IS NOT NULL;

-- Team approvals: votes, where a routed request's prompts go, reminders.
CREATE TABLE votes (
    approval_id text NOT NULL,
    person      text NOT NULL,               -- a [people] name
    via         text NOT NULL,
    approve     bigint NOT NULL CHECK (approve IN (0, 1)),
    reason      text,
    at          bigint NOT NULL,             -- Unix milliseconds
    factor      bigint NOT NULL DEFAULT 0 CHECK (factor IN (0, 1)),
    PRIMARY KEY (approval_id, person)
);

CREATE TABLE subject_audience (
    subject  text NOT NULL,
    platform text NOT NULL,
    chat     text NOT NULL,
    PRIMARY KEY (subject, platform, chat)
);
CREATE INDEX subject_audience_chat ON subject_audience (platform, chat);

CREATE TABLE reminders (
    id          bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    approval_id text NOT NULL,
    platform    text NOT NULL,
    chat        text NOT NULL,
    people      text NOT NULL,               -- JSON list of [people] names
    created_at  bigint NOT NULL,             -- Unix milliseconds
    UNIQUE (approval_id, platform, chat)
);
CREATE INDEX reminders_chat ON reminders (platform, chat);

-- Budgets: warnings sent, spend per day, small durable facts.
CREATE TABLE budget_warnings (
    budget text NOT NULL,
    period text NOT NULL,
    spent  double precision NOT NULL,
    at     bigint NOT NULL,
    PRIMARY KEY (budget, period)
);

CREATE TABLE spend_days (
    day    text NOT NULL,
    agent  text NOT NULL,
    amount double precision NOT NULL,
    PRIMARY KEY (day, agent)
);

CREATE TABLE budget_state (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- Second factors and step-up.
CREATE TABLE factors (
    id           text PRIMARY KEY,           -- a ULID
    person       text NOT NULL,              -- a [people] name
    label        text NOT NULL,              -- what the person calls it ("phone")
    secret       text NOT NULL,              -- base32; readable by gatebot's account only
    created_at   bigint NOT NULL,
    confirmed_at bigint,                     -- NULL: enrolment not finished
    last_step    bigint NOT NULL DEFAULT 0   -- the last time step accepted: a code works once
);
CREATE INDEX factors_person ON factors (person);

CREATE TABLE step_up_windows (
    person  text NOT NULL,
    surface text NOT NULL,
    until   bigint NOT NULL,
    PRIMARY KEY (person, surface)
);

CREATE TABLE step_up_failures (
    person  text PRIMARY KEY,
    count   bigint NOT NULL,
    last_at bigint NOT NULL
);

-- Batches asked in chats ("approve all 3 from deployer").
CREATE TABLE chat_batches (
    id         text PRIMARY KEY,                 -- a ULID, named by the card's buttons
    platform   text NOT NULL,
    chat       text NOT NULL,
    agent      text NOT NULL,
    approve    bigint NOT NULL,                  -- 1: approve, 0: deny
    reason     text,
    requests   text NOT NULL,                    -- JSON array of the request ids listed
    left_out   bigint NOT NULL,                  -- critical requests an approval left out
    asked_by   text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    state      text NOT NULL CHECK (state IN ('open', 'done', 'cancelled')),
    ended_by   text,
    ended_at   bigint,
    outcome    text
);
CREATE INDEX chat_batches_expiry ON chat_batches (expires_at);

-- What platforms that write to addresses know of each, and inbound ids already handled.
CREATE TABLE contacts (
    platform        text NOT NULL,
    address         text NOT NULL,
    last_inbound_at bigint,                       -- ms; NULL: never wrote
    stopped_at      bigint,                       -- ms; NULL: messages go to them
    PRIMARY KEY (platform, address)
);

CREATE TABLE inbound_seen (
    platform text NOT NULL,
    message  text NOT NULL,
    at       bigint NOT NULL,
    PRIMARY KEY (platform, message)
);
CREATE INDEX inbound_seen_at ON inbound_seen (at);

-- Running per-agent summaries of the evidence, kept by the triggers below in the
-- transaction that writes the request. Rows reaching n = 0 are kept.
CREATE TABLE evidence_totals (
    agent   text NOT NULL,
    status  text NOT NULL,
    asked   bigint NOT NULL,
    granted bigint NOT NULL,
    low     bigint NOT NULL,
    n       bigint NOT NULL,
    PRIMARY KEY (agent, status, asked, granted, low)
);

CREATE TABLE evidence_hours (
    agent   text NOT NULL,
    hour    bigint NOT NULL,
    status  text NOT NULL,
    asked   bigint NOT NULL,
    granted bigint NOT NULL,
    low     bigint NOT NULL,
    n       bigint NOT NULL,
    PRIMARY KEY (agent, hour, status, asked, granted, low)
);

-- Whether the summaries hold every request: a new database has nothing to build.
CREATE TABLE evidence_state (
    id    bigint PRIMARY KEY CHECK (id = 1),
    built bigint NOT NULL
);
INSERT INTO evidence_state (id, built) VALUES (1, 1);

-- SQLite writes a comparison (`ttl_ms IS NOT NULL`) as 0 or 1; here it is a boolean,
-- turned into 0 or 1 with `::int` (there is no boolean-to-bigint cast).
-- `created_at / 3600000` divides integers in both, rounding toward zero.
CREATE FUNCTION evidence_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO evidence_totals AS t (agent, status, asked, granted, low, n)
    VALUES (NEW.agent, NEW.status, (NEW.ttl_ms IS NOT NULL)::int,
            (NEW.grant_id IS NOT NULL)::int, COALESCE(NEW.low_confidence, 0), 1)
    ON CONFLICT (agent, status, asked, granted, low) DO UPDATE SET n = t.n + 1;
    INSERT INTO evidence_hours AS h (agent, hour, status, asked, granted, low, n)
    VALUES (NEW.agent, NEW.created_at / 3600000, NEW.status, (NEW.ttl_ms IS NOT NULL)::int,
            (NEW.grant_id IS NOT NULL)::int, COALESCE(NEW.low_confidence, 0), 1)
    ON CONFLICT (agent, hour, status, asked, granted, low) DO UPDATE SET n = h.n + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER evidence_counts_insert AFTER INSERT ON approvals
FOR EACH ROW EXECUTE FUNCTION evidence_counts_insert();

CREATE FUNCTION evidence_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE evidence_totals SET n = n - 1
    WHERE agent = OLD.agent AND status = OLD.status
      AND asked = (OLD.ttl_ms IS NOT NULL)::int AND granted = (OLD.grant_id IS NOT NULL)::int
      AND low = COALESCE(OLD.low_confidence, 0);
    UPDATE evidence_hours SET n = n - 1
    WHERE agent = OLD.agent AND hour = OLD.created_at / 3600000 AND status = OLD.status
      AND asked = (OLD.ttl_ms IS NOT NULL)::int AND granted = (OLD.grant_id IS NOT NULL)::int
      AND low = COALESCE(OLD.low_confidence, 0);
    INSERT INTO evidence_totals AS t (agent, status, asked, granted, low, n)
    VALUES (NEW.agent, NEW.status, (NEW.ttl_ms IS NOT NULL)::int,
            (NEW.grant_id IS NOT NULL)::int, COALESCE(NEW.low_confidence, 0), 1)
    ON CONFLICT (agent, status, asked, granted, low) DO UPDATE SET n = t.n + 1;
    INSERT INTO evidence_hours AS h (agent, hour, status, asked, granted, low, n)
    VALUES (NEW.agent, NEW.created_at / 3600000, NEW.status, (NEW.ttl_ms IS NOT NULL)::int,
            (NEW.grant_id IS NOT NULL)::int, COALESCE(NEW.low_confidence, 0), 1)
    ON CONFLICT (agent, hour, status, asked, granted, low) DO UPDATE SET n = h.n + 1;
    RETURN NULL;
END $$;
-- SQLite's `IS NOT` is `IS DISTINCT FROM` here.
CREATE TRIGGER evidence_counts_update
AFTER UPDATE OF agent, status, ttl_ms, grant_id, low_confidence, created_at ON approvals
FOR EACH ROW
WHEN (OLD.agent IS DISTINCT FROM NEW.agent OR OLD.status IS DISTINCT FROM NEW.status
      OR (OLD.ttl_ms IS NOT NULL) <> (NEW.ttl_ms IS NOT NULL)
      OR (OLD.grant_id IS NOT NULL) <> (NEW.grant_id IS NOT NULL)
      OR COALESCE(OLD.low_confidence, 0) <> COALESCE(NEW.low_confidence, 0)
      OR OLD.created_at / 3600000 IS DISTINCT FROM NEW.created_at / 3600000)
EXECUTE FUNCTION evidence_counts_update();

-- gatebot deletes no request; should someone, the summaries follow.
CREATE FUNCTION evidence_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE evidence_totals SET n = n - 1
    WHERE agent = OLD.agent AND status = OLD.status
      AND asked = (OLD.ttl_ms IS NOT NULL)::int AND granted = (OLD.grant_id IS NOT NULL)::int
      AND low = COALESCE(OLD.low_confidence, 0);
    UPDATE evidence_hours SET n = n - 1
    WHERE agent = OLD.agent AND hour = OLD.created_at / 3600000 AND status = OLD.status
      AND asked = (OLD.ttl_ms IS NOT NULL)::int AND granted = (OLD.grant_id IS NOT NULL)::int
      AND low = COALESCE(OLD.low_confidence, 0);
    RETURN NULL;
END $$;
CREATE TRIGGER evidence_counts_delete AFTER DELETE ON approvals
FOR EACH ROW EXECUTE FUNCTION evidence_counts_delete();

-- What SQLite lets the store's statements say, said here too, so each statement is written
-- once for both databases. SQLite has no boolean type: a comparison is 0 or 1, summed to
-- count rows (`SUM(status = 'expired')`) and multiplied to count them by a column
-- (`SUM(n * (asked = 1))`). PostgreSQL's comparisons are `boolean`, which it neither sums
-- nor multiplies: these take a boolean as 0 or 1, as SQLite does. Only these three forms
-- are given; nothing else about booleans changes.
CREATE FUNCTION sqlite_sum_boolean(total bigint, b boolean) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT COALESCE(total, 0) + COALESCE(b::int, 0) $$;
CREATE AGGREGATE sum(boolean) (SFUNC = sqlite_sum_boolean, STYPE = bigint);
CREATE FUNCTION sqlite_times_boolean(n bigint, b boolean) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT n * b::int $$;
CREATE OPERATOR * (LEFTARG = bigint, RIGHTARG = boolean, FUNCTION = sqlite_times_boolean);
CREATE FUNCTION sqlite_boolean_times(b boolean, n bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT b::int * n $$;
CREATE OPERATOR * (LEFTARG = boolean, RIGHTARG = bigint, FUNCTION = sqlite_boolean_times);

-- SQLite's json_each over a JSON array of text, as the store's statements use it
-- (`FROM json_each(?1) j` … `j.value`, a list of ids passed as one parameter): the same
-- name for a `text` argument, so those statements are written once for both databases.
-- PostgreSQL's own json_each (the members of an object) takes `json`, and the store binds
-- its text parameters as `text`, so this one is chosen. `key` is the index, from 0.
CREATE FUNCTION json_each(list text) RETURNS TABLE (key bigint, value text)
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT ordinality - 1, value FROM json_array_elements_text(list::json) WITH ORDINALITY
$$;
