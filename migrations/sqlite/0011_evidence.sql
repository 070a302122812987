-- Which owner's grant let a request run without asking a human (docs/trust.md, "Evidence").
--
-- An agent's own report of how a call went counts as evidence only where a human stood
-- behind the call: a human decided it, or it ran under a grant an owner made. Until now
-- a request recorded that only in the words of its policy reason; `grant_id` records it
-- so the evidence counts can tell a call an owner vouched for from one nobody was asked
-- about. Set at submission, only for requests a grant let through (status `allowed`
-- then, and later `executing`, `succeeded` or `failed` as the agent reports).
ALTER TABLE approvals ADD COLUMN grant_id TEXT;

-- Requests made before: the engine wrote "… always-allowed by an owner's grant (grant
-- SHORTID: scope)" into the reason of every request a grant let through.
UPDATE approvals
SET grant_id = (
    SELECT g.id FROM grants g
    WHERE g.agent = approvals.agent AND g.tool = approvals.tool
      AND instr(approvals.policy_reason, ' (grant ' || g.short_id || ': ') > 0
    ORDER BY g.created_at LIMIT 1)
WHERE ttl_ms IS NULL
  AND status IN ('allowed', 'executing', 'succeeded', 'failed')
  AND instr(policy_reason, 'by an owner''s grant (grant ') > 0;
