-- Team approvals (docs/teams.md): a request an approval rule routes keeps what the rule
-- asked when it was made (`route`, JSON: the rule's name, the people asked, how many
-- approvals and denials settle it, whether the task's owner may approve), and each
-- person's vote on it, once per person. The vote that settles a request is recorded in
-- the transaction that settles it.
ALTER TABLE approvals ADD COLUMN route TEXT;   -- NULL: no rule; the first answer decides

CREATE TABLE votes (
    approval_id TEXT NOT NULL,
    person      TEXT NOT NULL,               -- a [people] name
    via         TEXT NOT NULL,               -- where: telegram, slack, cli, dashboard
    approve     INTEGER NOT NULL CHECK (approve IN (0, 1)),
    reason      TEXT,
    at          INTEGER NOT NULL,            -- Unix milliseconds
    PRIMARY KEY (approval_id, person)
) WITHOUT ROWID;

-- Where a routed request's prompts go: the chats of the groups its rule asks (a group's
-- own chat or channel, else each of its people's private chat with the bot). A subject
-- with rows here is shown in those chats only, not in the platform's usual ones.
CREATE TABLE subject_audience (
    subject  TEXT NOT NULL,
    platform TEXT NOT NULL,
    chat     TEXT NOT NULL,
    PRIMARY KEY (subject, platform, chat)
) WITHOUT ROWID;
CREATE INDEX subject_audience_chat ON subject_audience (platform, chat);
