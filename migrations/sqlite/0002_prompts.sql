-- Chat prompts: which message in which chat shows which request, so a decision made
-- anywhere can edit every copy, also after a restart.
CREATE TABLE prompts (
    approval_id  TEXT NOT NULL REFERENCES approvals (id),
    channel      TEXT NOT NULL,                 -- telegram / slack
    chat         TEXT NOT NULL,                 -- Telegram chat id / Slack channel id
    message      TEXT NOT NULL,                 -- Telegram message id / Slack ts
    posted_at    INTEGER NOT NULL,
    final_status TEXT,                          -- the status the message last showed as settled
    PRIMARY KEY (approval_id, channel, chat)
);
CREATE INDEX prompts_by_message ON prompts (channel, chat, message);
