-- One conversation mechanism for every kind of chat subject.
--
-- 1. `subjects`: everything gatebot shows in chats with cards of its own (so far the
--    requests that asked a human), whether it is still open (a chat without its card
--    gets one while it is), and a revision that changes whenever what its card shows
--    changes. The store keeps it in step, in the transaction of each change. Its short
--    id is unique across kinds, so an owner's `decide k7m2` names one thing.
-- 2. `cards` (was `prompts`): which message in which chat shows which subject, and the
--    revision it was drawn at; `shown_by = 'digest'` when a digest stands for it. A
--    row is written before its post starts (`message` NULL) and completed after.
-- 3. `questions` (was `reason_questions`): questions gatebot asked in chats, by the
--    message that asks them, with the subject and what the answer is for.
-- 4. Chat bookkeeping names a platform (`telegram`, `slack`, …) in a `platform` column.
CREATE TABLE subjects (
    id         TEXT PRIMARY KEY,            -- a ULID, unique across kinds
    kind       TEXT NOT NULL,               -- 'approval'
    short_id   TEXT NOT NULL UNIQUE,        -- for typing, like a request's
    open       INTEGER NOT NULL,            -- 1 while it waits for people
    revision   TEXT NOT NULL,               -- e.g. the request's status
    created_at INTEGER NOT NULL
);
CREATE INDEX subjects_open ON subjects (id) WHERE open = 1;
INSERT INTO subjects (id, kind, short_id, open, revision, created_at)
    SELECT a.id, 'approval', a.short_id, a.status = 'pending', a.status, a.created_at
    FROM approvals a
    WHERE a.status = 'pending'
       OR EXISTS (SELECT 1 FROM prompts p WHERE p.approval_id = a.id)
       OR EXISTS (SELECT 1 FROM reason_questions q WHERE q.approval_id = a.id);

CREATE TABLE cards (
    subject   TEXT NOT NULL,
    platform  TEXT NOT NULL,
    chat      TEXT NOT NULL,
    message   TEXT,                         -- NULL: the post is in flight
    shown_by  TEXT NOT NULL CHECK (shown_by IN ('card', 'digest')),
    revision  TEXT NOT NULL,                -- the subject's revision the message shows
    posted_at INTEGER NOT NULL,
    PRIMARY KEY (subject, platform, chat)
);
CREATE INDEX cards_by_message ON cards (platform, chat, message);
INSERT INTO cards (subject, platform, chat, message, shown_by, revision, posted_at)
    SELECT approval_id, channel, chat, message,
           CASE kind WHEN 'digest' THEN 'digest' ELSE 'card' END,
           COALESCE(final_status, 'pending'), posted_at
    FROM prompts;
DROP TABLE prompts;

ALTER TABLE digests RENAME COLUMN channel TO platform;

CREATE TABLE questions (
    platform TEXT NOT NULL,
    chat     TEXT NOT NULL,
    message  TEXT NOT NULL,                 -- the question's message id
    subject  TEXT NOT NULL,
    purpose  TEXT NOT NULL,                 -- 'deny_reason'
    asked_at INTEGER NOT NULL,
    PRIMARY KEY (platform, chat, message)
);
INSERT INTO questions (platform, chat, message, subject, purpose, asked_at)
    SELECT channel, chat, message, approval_id, 'deny_reason', asked_at FROM reason_questions;
DROP TABLE reason_questions;
