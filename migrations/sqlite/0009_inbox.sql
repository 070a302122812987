-- The inbox: tasks owners hand to agents (docs/inbox.md), and where chat cards go.
--
-- 1. `tasks`: one row per task, its classification, lifecycle (see src/inbox/lifecycle.rs),
--    lease, progress and outcome. Its id is also its subject's id (kind 'task').
-- 2. `task_questions`: the questions a task waits on (the classifier's clarify question,
--    or the agent's questions), each a subject of kind 'task' too, so it gets a card of
--    its own in the task's thread.
-- 3. Subjects get a home and a parent. A subject with a home is shown only in that
--    platform's chat, as a reply to `home_reply_to` (in the thread `home_root` starts,
--    where the platform has threads); one without is shown in every destination chat. A
--    subject with a parent is posted under the parent's card in each chat. Cards record
--    the thread they were posted in, so a child knows where its parent's thread is.
-- 4. A request made while a task runs names it (`approvals.task_id`).
CREATE TABLE tasks (
    id              TEXT PRIMARY KEY,           -- a ULID, also the subject's id
    short_id        TEXT NOT NULL UNIQUE,       -- the subject's short id
    status          TEXT NOT NULL CHECK (status IN ('pending', 'queued', 'running', 'waiting',
                        'completed', 'failed', 'rejected', 'cancelled')),
    intent          TEXT NOT NULL,
    summary         TEXT NOT NULL,
    prompt          TEXT NOT NULL,              -- the execution prompt
    level           INTEGER NOT NULL,           -- 1 the owner confirms first, 2 queued at once
    classifier      TEXT NOT NULL,              -- 'keywords' or 'model'
    agent           TEXT NOT NULL,
    text            TEXT NOT NULL,              -- the owner's words
    clarification   TEXT,                       -- the owner's answer to the clarify question
    created_by      TEXT NOT NULL,
    created_via     TEXT NOT NULL,              -- cli / api / telegram / slack / …
    decided_by      TEXT,                       -- who queued, rejected, cancelled or retried it last
    attempts        INTEGER NOT NULL DEFAULT 0, -- claims in this run
    lapses          INTEGER NOT NULL DEFAULT 0, -- leases that lapsed in this run
    lease           TEXT,                       -- the running worker's lease
    lease_until     INTEGER,
    deadline        INTEGER,                    -- the run's timeout, grace included
    progress        TEXT,
    progress_at     INTEGER,
    revision        INTEGER NOT NULL DEFAULT 0, -- moves whenever what its card shows changes
    shown_at        INTEGER NOT NULL DEFAULT 0, -- when the revision last moved
    progress_due    INTEGER,                    -- progress not on the card yet: due then
    result          TEXT,
    error           TEXT,
    cost_usd        REAL,
    session_id      TEXT,
    input           TEXT,                       -- the owner's answer, for the next claim
    input_questions TEXT,                       -- JSON: what that answer answers
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    started_at      INTEGER,
    finished_at     INTEGER
);
-- Claimed oldest first: in rowid order, which an index on (agent) keeps.
CREATE INDEX tasks_queued ON tasks (agent) WHERE status = 'queued';
CREATE INDEX tasks_running ON tasks (agent) WHERE status = 'running';
CREATE INDEX tasks_open ON tasks (status) WHERE status IN ('pending', 'queued', 'running', 'waiting');
CREATE INDEX tasks_progress_due ON tasks (progress_due) WHERE progress_due IS NOT NULL;

CREATE TABLE task_questions (
    id           TEXT PRIMARY KEY,              -- a ULID, also the subject's id
    task         TEXT NOT NULL REFERENCES tasks (id),
    purpose      TEXT NOT NULL CHECK (purpose IN ('clarify', 'input')),
    questions    TEXT NOT NULL,                 -- JSON array of strings
    choices      TEXT NOT NULL DEFAULT '[]',    -- JSON array of strings
    state        TEXT NOT NULL CHECK (state IN ('open', 'answered', 'dropped')),
    answer       TEXT,
    answered_by  TEXT,
    answered_via TEXT,
    asked_at     INTEGER NOT NULL,
    answered_at  INTEGER
);
CREATE INDEX task_questions_by_task ON task_questions (task, state);

ALTER TABLE subjects ADD COLUMN home_platform TEXT;
ALTER TABLE subjects ADD COLUMN home_chat TEXT;
ALTER TABLE subjects ADD COLUMN home_reply_to TEXT;
ALTER TABLE subjects ADD COLUMN home_root TEXT;
ALTER TABLE subjects ADD COLUMN parent TEXT;
CREATE INDEX subjects_home ON subjects (home_platform, home_chat) WHERE home_platform IS NOT NULL;
CREATE INDEX subjects_root ON subjects (home_platform, home_chat, home_root)
    WHERE home_root IS NOT NULL;

ALTER TABLE cards ADD COLUMN thread TEXT;       -- the thread root the card was posted in

ALTER TABLE approvals ADD COLUMN task_id TEXT;
CREATE INDEX approvals_task ON approvals (task_id) WHERE task_id IS NOT NULL;
