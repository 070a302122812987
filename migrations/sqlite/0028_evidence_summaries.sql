-- Running per-agent summaries of the evidence (docs/trust.md, "Evidence"), so an agent's
-- view reads a few summary rows instead of counting every one of its requests.
--
-- `low_confidence`: 1 when the request's confidence was below the agent's `ask_human`
-- threshold in force when it was sent (the policy blocked it for that), 0 otherwise. The
-- engine sets it with the request. NULL on rows written before this migration: the
-- engine sets those once at its next start from the config's thresholds (a migration
-- cannot read the config), then builds the summaries (`evidence_state.built`).
ALTER TABLE approvals ADD COLUMN low_confidence INTEGER;

-- What every figure of the evidence is counted from: a request's agent, its status,
-- whether it asked a human (`ttl_ms IS NOT NULL`), whether an owner's grant let it
-- through (`grant_id IS NOT NULL`) and `low_confidence`; `n` requests have that key.
-- All time, and per hour of `created_at` (ms / 3 600 000) for the rolling window and
-- the dashboard's chart. Rows reaching n = 0 are kept (a key is soon used again).
CREATE TABLE evidence_totals (
    agent   TEXT NOT NULL,
    status  TEXT NOT NULL,
    asked   INTEGER NOT NULL,
    granted INTEGER NOT NULL,
    low     INTEGER NOT NULL,
    n       INTEGER NOT NULL,
    PRIMARY KEY (agent, status, asked, granted, low)
) WITHOUT ROWID;

CREATE TABLE evidence_hours (
    agent   TEXT NOT NULL,
    hour    INTEGER NOT NULL,
    status  TEXT NOT NULL,
    asked   INTEGER NOT NULL,
    granted INTEGER NOT NULL,
    low     INTEGER NOT NULL,
    n       INTEGER NOT NULL,
    PRIMARY KEY (agent, hour, status, asked, granted, low)
) WITHOUT ROWID;

-- Whether the summaries hold every request. A database without requests has nothing to
-- build; one with requests is built by the engine at its next start (see above).
CREATE TABLE evidence_state (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    built INTEGER NOT NULL
);
INSERT INTO evidence_state (id, built) VALUES (1, NOT EXISTS (SELECT 1 FROM approvals));

-- The triggers keep both summaries in the transaction that writes the request, whoever
-- writes it. A request's key changes with its status (decided, expired, cancelled,
-- reported, denied by a pause) and, once, with `low_confidence`; the other columns are
-- written once, but a change of any of them is followed too.
CREATE TRIGGER evidence_counts_insert AFTER INSERT ON approvals
BEGIN
    INSERT INTO evidence_totals (agent, status, asked, granted, low, n)
    VALUES (NEW.agent, NEW.status, NEW.ttl_ms IS NOT NULL, NEW.grant_id IS NOT NULL,
            COALESCE(NEW.low_confidence, 0), 1)
    ON CONFLICT (agent, status, asked, granted, low) DO UPDATE SET n = n + 1;
    INSERT INTO evidence_hours (agent, hour, status, asked, granted, low, n)
    VALUES (NEW.agent, NEW.created_at / 3600000, NEW.status, NEW.ttl_ms IS NOT NULL,
            NEW.grant_id IS NOT NULL, COALESCE(NEW.low_confidence, 0), 1)
    ON CONFLICT (agent, hour, status, asked, granted, low) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER evidence_counts_update
AFTER UPDATE OF agent, status, ttl_ms, grant_id, low_confidence, created_at ON approvals
WHEN OLD.agent IS NOT NEW.agent OR OLD.status IS NOT NEW.status
  OR (OLD.ttl_ms IS NOT NULL) <> (NEW.ttl_ms IS NOT NULL)
  OR (OLD.grant_id IS NOT NULL) <> (NEW.grant_id IS NOT NULL)
  OR COALESCE(OLD.low_confidence, 0) <> COALESCE(NEW.low_confidence, 0)
  OR OLD.created_at / 3600000 IS NOT NEW.created_at / 3600000
BEGIN
    UPDATE evidence_totals SET n = n - 1
    WHERE agent = OLD.agent AND status = OLD.status AND asked = (OLD.ttl_ms IS NOT NULL)
      AND granted = (OLD.grant_id IS NOT NULL) AND low = COALESCE(OLD.low_confidence, 0);
    UPDATE evidence_hours SET n = n - 1
    WHERE agent = OLD.agent AND hour = OLD.created_at / 3600000 AND status = OLD.status
      AND asked = (OLD.ttl_ms IS NOT NULL) AND granted = (OLD.grant_id IS NOT NULL)
      AND low = COALESCE(OLD.low_confidence, 0);
    INSERT INTO evidence_totals (agent, status, asked, granted, low, n)
    VALUES (NEW.agent, NEW.status, NEW.ttl_ms IS NOT NULL, NEW.grant_id IS NOT NULL,
            COALESCE(NEW.low_confidence, 0), 1)
    ON CONFLICT (agent, status, asked, granted, low) DO UPDATE SET n = n + 1;
    INSERT INTO evidence_hours (agent, hour, status, asked, granted, low, n)
    VALUES (NEW.agent, NEW.created_at / 3600000, NEW.status, NEW.ttl_ms IS NOT NULL,
            NEW.grant_id IS NOT NULL, COALESCE(NEW.low_confidence, 0), 1)
    ON CONFLICT (agent, hour, status, asked, granted, low) DO UPDATE SET n = n + 1;
END;

-- gatebot deletes no request; should someone, the summaries follow.
CREATE TRIGGER evidence_counts_delete AFTER DELETE ON approvals
BEGIN
    UPDATE evidence_totals SET n = n - 1
    WHERE agent = OLD.agent AND status = OLD.status AND asked = (OLD.ttl_ms IS NOT NULL)
      AND granted = (OLD.grant_id IS NOT NULL) AND low = COALESCE(OLD.low_confidence, 0);
    UPDATE evidence_hours SET n = n - 1
    WHERE agent = OLD.agent AND hour = OLD.created_at / 3600000 AND status = OLD.status
      AND asked = (OLD.ttl_ms IS NOT NULL) AND granted = (OLD.grant_id IS NOT NULL)
      AND low = COALESCE(OLD.low_confidence, 0);
END;

-- An agent's latest human decisions (the demotion check) read newest first, n rows.
CREATE INDEX approvals_decisions ON approvals (agent, decided_at, id)
WHERE ttl_ms IS NOT NULL AND decided_at IS NOT NULL
  AND status IN ('approved', 'executing', 'succeeded', 'failed', 'rejected');
-- An agent's pending requests, counted for its view without reading its settled ones.
CREATE INDEX approvals_pending_agent ON approvals (agent) WHERE status = 'pending';
