-- Chain the audit trail: each row carries the hash of the previous row and its own
-- hash over (previous hash, at, approval_id, event, actor, channel, detail), so
-- `gatebot audit verify` detects an edited, deleted or reordered row.
-- Rows written before this migration have no hash; the chain starts after them.
ALTER TABLE audit ADD COLUMN prev_hash TEXT;
ALTER TABLE audit ADD COLUMN hash TEXT;
