-- Drafts: a draft-only agent's write and destructive calls are kept for its owner (the
-- dashboard's drafts page), who discards one or hands it to an agent as an inbox task.
ALTER TABLE approvals ADD COLUMN draft TEXT
    CHECK (draft IN ('open', 'discarded', 'handed'));   -- NULL: not a draft
ALTER TABLE approvals ADD COLUMN draft_task TEXT;       -- the task it was handed on as
CREATE INDEX approvals_open_drafts ON approvals (id) WHERE draft = 'open';
