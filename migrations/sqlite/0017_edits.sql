-- Edit, then approve: whether the agent's client takes an edited call back (Claude Code's
-- hooks, the MCP permission tool), and the call as an owner edited and approved it.
ALTER TABLE approvals ADD COLUMN accepts_edits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN edited_args TEXT;   -- JSON; NULL: approved (or not) as asked
