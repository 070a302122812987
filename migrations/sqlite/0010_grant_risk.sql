-- A grant never covers a call riskier than the one the owner approved.
--
-- `max_risk`: the risk of the request whose decision made the grant (a critical
-- request never makes one). A call the grant's scope covers runs under it only when
-- its own risk is at most this. Grants made before this column existed take the risk
-- of their request; the whole-tool grants moved in from `always_allow` (no request)
-- keep what they covered then: everything short of critical.
ALTER TABLE grants ADD COLUMN max_risk TEXT NOT NULL DEFAULT 'high'
    CHECK (max_risk IN ('low', 'medium', 'high'));

UPDATE grants
   SET max_risk = (SELECT CASE a.risk_score WHEN 'critical' THEN 'high' ELSE a.risk_score END
                     FROM approvals a WHERE a.id = grants.approval_id)
 WHERE EXISTS (SELECT 1 FROM approvals a WHERE a.id = grants.approval_id);
