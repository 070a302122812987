-- gatebot's first schema: approvals, the append-only audit trail, and the
-- always-allow additions made by owners. Timestamps are Unix milliseconds (UTC).

CREATE TABLE approvals (
    id                   TEXT PRIMARY KEY,            -- ULID: sortable by creation
    short_id             TEXT NOT NULL UNIQUE,        -- 8 chars, for typing in chat
    agent                TEXT NOT NULL,
    tool                 TEXT NOT NULL,
    args                 TEXT NOT NULL,               -- JSON
    summary              TEXT,
    confidence           REAL,
    environment          TEXT,
    idempotency_key      TEXT,
    status               TEXT NOT NULL CHECK (status IN (
                             'pending', 'approved', 'rejected', 'expired', 'cancelled',
                             'executing', 'succeeded', 'failed', 'allowed', 'blocked')),
    risk_score           TEXT NOT NULL,
    tool_class           TEXT NOT NULL,
    risk_factors         TEXT NOT NULL,               -- JSON array of factor names
    policy_reason        TEXT NOT NULL,
    checkpoint           INTEGER NOT NULL DEFAULT 0,
    always_allow_offered INTEGER NOT NULL DEFAULT 0,
    decided_by           TEXT,
    decided_via          TEXT,                        -- telegram / slack / cli / api / system
    decision_reason      TEXT,
    always_allowed       INTEGER NOT NULL DEFAULT 0,  -- approved with "Always allow"
    result_detail        TEXT,
    ttl_ms               INTEGER,
    created_at           INTEGER NOT NULL,
    decided_at           INTEGER,
    expires_at           INTEGER,
    finished_at          INTEGER,
    UNIQUE (agent, idempotency_key)
);

-- The expiry task asks for the next deadline among pending requests.
CREATE INDEX approvals_pending_deadline ON approvals (expires_at) WHERE status = 'pending';
-- First-use and history checks.
CREATE INDEX approvals_agent_tool ON approvals (agent, tool, status);

CREATE TABLE audit (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    approval_id TEXT,
    event       TEXT NOT NULL,
    actor       TEXT,
    channel     TEXT,
    detail      TEXT                                  -- JSON object
);
CREATE INDEX audit_approval ON audit (approval_id);

CREATE TRIGGER audit_is_append_only_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER audit_is_append_only_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;

-- Tools an owner allowed for good with "Always allow" (config's always_allow is separate).
CREATE TABLE always_allow (
    agent       TEXT NOT NULL,
    tool        TEXT NOT NULL,
    added_at    INTEGER NOT NULL,
    added_by    TEXT NOT NULL,
    added_via   TEXT NOT NULL,
    approval_id TEXT,
    PRIMARY KEY (agent, tool)
);
