-- Reminders (docs/teams.md): a routed request's timers are its reminder (`remind_after`),
-- its escalation levels and their repeats, all counted from its creation. `route_due_at`
-- (Unix ms; NULL: none left) is when the next is due; the housekeeping pass acts on every
-- timer due, records how far it got in the stored route, and sets the next, in one
-- transaction, so a restart neither skips nor repeats one.
ALTER TABLE approvals RENAME COLUMN next_escalation_at TO route_due_at;
DROP INDEX approvals_escalation_due;
CREATE INDEX approvals_route_due ON approvals (route_due_at) WHERE route_due_at IS NOT NULL;

-- A reminder to post: in one chat, to the people asked there who have not voted. Written
-- with the timer that calls for it; taken (deleted) by the chat's delivery just before it
-- posts, so a reminder whose post was under way when gatebot stopped is not posted again
-- (put back only when the platform said it did nothing). One per request and chat: a
-- reminder still waiting to be posted absorbs the next.
CREATE TABLE reminders (
    id          INTEGER PRIMARY KEY,
    approval_id TEXT NOT NULL,
    platform    TEXT NOT NULL,
    chat        TEXT NOT NULL,
    people      TEXT NOT NULL,               -- JSON list of [people] names
    created_at  INTEGER NOT NULL,            -- Unix milliseconds
    UNIQUE (approval_id, platform, chat)
);
CREATE INDEX reminders_chat ON reminders (platform, chat);
