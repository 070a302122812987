-- Edit, then approve, for clients that cannot take an edited call back (Codex, Gemini
-- CLI, `gatebot ask`): the agent is denied with the exact edited call, and a grant of
-- scope `call` lets exactly that call (its arguments, compared as canonical JSON in
-- `pattern`) through once. `uses_left`: how many more calls a grant lets through
-- (NULL: any number, every grant before this one); a call it lets through takes one in
-- the transaction that stores the call, so two concurrent copies cannot both run.
--
-- SQLite cannot change a CHECK constraint in place: the table is rebuilt, same rows.
CREATE TABLE grants_new (
    id          TEXT PRIMARY KEY,
    short_id    TEXT NOT NULL UNIQUE,
    agent       TEXT NOT NULL,
    tool        TEXT NOT NULL,
    scope       TEXT NOT NULL CHECK (scope IN ('tool', 'exact', 'prefix', 'call')),
    pattern     TEXT,
    granted_by  TEXT NOT NULL,
    granted_via TEXT NOT NULL,
    reason      TEXT,
    approval_id TEXT,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    revoked_at  INTEGER,
    revoked_by  TEXT,
    revoked_via TEXT,
    max_risk    TEXT NOT NULL DEFAULT 'high' CHECK (max_risk IN ('low', 'medium', 'high')),
    uses_left   INTEGER CHECK (uses_left IS NULL OR uses_left >= 0),
    CHECK ((scope = 'tool') = (pattern IS NULL))
);
INSERT INTO grants_new (id, short_id, agent, tool, scope, pattern, granted_by, granted_via,
                        reason, approval_id, created_at, expires_at, revoked_at, revoked_by,
                        revoked_via, max_risk)
SELECT id, short_id, agent, tool, scope, pattern, granted_by, granted_via, reason,
       approval_id, created_at, expires_at, revoked_at, revoked_by, revoked_via, max_risk
  FROM grants;
DROP TABLE grants;
ALTER TABLE grants_new RENAME TO grants;
CREATE INDEX grants_in_force ON grants (agent, tool) WHERE revoked_at IS NULL;
CREATE INDEX grants_by_approval ON grants (approval_id) WHERE approval_id IS NOT NULL;
