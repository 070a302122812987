-- Prompt bookkeeping for bursts and restarts.
--
-- 1. `prompts.message` may now be NULL: the row is written before a post starts and
--    filled in when the platform answers, so after a crash (or a lost answer) gatebot
--    knows that a post's outcome is unknown instead of not knowing it tried.
-- 2. `prompts.kind`: 'prompt' is a request's own message; 'digest' means the request
--    is covered by a digest message that stands for many requests posted at once.
-- 3. `digests`: what each digest message shows (its summary, one request under
--    review, or the final tally).
-- 4. `reason_questions`: the "why deny?" questions, so a reply still counts after a
--    restart.
CREATE TABLE prompts_v2 (
    approval_id  TEXT NOT NULL REFERENCES approvals (id),
    channel      TEXT NOT NULL,                 -- telegram / slack
    chat         TEXT NOT NULL,                 -- Telegram chat id / Slack channel id
    message      TEXT,                          -- Telegram message id / Slack ts; NULL: post in flight
    kind         TEXT NOT NULL DEFAULT 'prompt' CHECK (kind IN ('prompt', 'digest')),
    posted_at    INTEGER NOT NULL,
    final_status TEXT,                          -- the status the message last showed as settled
    PRIMARY KEY (approval_id, channel, chat)
);
INSERT INTO prompts_v2 (approval_id, channel, chat, message, kind, posted_at, final_status)
    SELECT approval_id, channel, chat, message, 'prompt', posted_at, final_status FROM prompts;
DROP TABLE prompts;
ALTER TABLE prompts_v2 RENAME TO prompts;
CREATE INDEX prompts_by_message ON prompts (channel, chat, message);

CREATE TABLE digests (
    channel   TEXT NOT NULL,
    chat      TEXT NOT NULL,
    message   TEXT NOT NULL,
    showing   TEXT REFERENCES approvals (id),   -- the request under review; NULL: the summary
    closed    INTEGER NOT NULL DEFAULT 0,       -- 1 once it shows the final tally
    posted_at INTEGER NOT NULL,
    PRIMARY KEY (channel, chat, message)
);

CREATE TABLE reason_questions (
    channel     TEXT NOT NULL,
    chat        TEXT NOT NULL,
    message     TEXT NOT NULL,                  -- the question's message id
    approval_id TEXT NOT NULL REFERENCES approvals (id),
    asked_at    INTEGER NOT NULL,
    PRIMARY KEY (channel, chat, message)
);
