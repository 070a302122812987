-- Agent trust that grows from evidence (docs/trust.md).
--
-- 1. `tier_overrides`: an owner's tier for an agent, over bot.toml's baseline.
-- 2. `pauses`: paused agents; every new request of theirs is blocked.
-- 3. `grants`: what "Always allow" became: who granted what, when, why, for how long,
--    in which scope (the whole tool, one exact command, or a command prefix), and
--    whether it was revoked. The owners' additions in `always_allow` move here as
--    whole-tool grants, and that table goes.
-- 4. `grant_offers`: what a prompt offers to grant (the exact command and the prefix of
--    a shell-like tool's call, the learned suggestion), written with the request so a
--    button press grants exactly what the prompt showed; buttons name the request.
-- 5. `proposals`: tier changes gatebot proposes from evidence, for an owner to approve
--    or decline; each is a subject (kind 'proposal') with cards of its own.
-- 6. `agent_handles`: a ULID per agent, so chat buttons about an agent (pause, resume)
--    fit in 64 bytes whatever the agent's name.
-- 7. `trust_state`: small durable facts, such as when the assessment last ran.

CREATE TABLE tier_overrides (
    agent    TEXT PRIMARY KEY,
    tier     TEXT NOT NULL CHECK (tier IN ('draft_only', 'supervised', 'semi_autonomous', 'autonomous')),
    set_by   TEXT NOT NULL,
    set_via  TEXT NOT NULL,
    reason   TEXT,
    set_at   INTEGER NOT NULL,
    proposal TEXT                                -- the approved proposal that set it, if any
);

CREATE TABLE pauses (
    agent      TEXT PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,             -- a ULID
    paused_by  TEXT NOT NULL,
    paused_via TEXT NOT NULL,
    reason     TEXT,
    paused_at  INTEGER NOT NULL
);

CREATE TABLE grants (
    id          TEXT PRIMARY KEY,                -- a ULID
    short_id    TEXT NOT NULL UNIQUE,
    agent       TEXT NOT NULL,
    tool        TEXT NOT NULL,
    scope       TEXT NOT NULL CHECK (scope IN ('tool', 'exact', 'prefix')),
    pattern     TEXT,                            -- the command or prefix; NULL for 'tool'
    granted_by  TEXT NOT NULL,
    granted_via TEXT NOT NULL,
    reason      TEXT,
    approval_id TEXT,                            -- the request whose decision made it
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,                         -- NULL: until revoked
    revoked_at  INTEGER,
    revoked_by  TEXT,
    revoked_via TEXT,
    CHECK ((scope = 'tool') = (pattern IS NULL))
);
-- The submit path reads the grants in force for one agent and tool.
CREATE INDEX grants_in_force ON grants (agent, tool) WHERE revoked_at IS NULL;
CREATE INDEX grants_by_approval ON grants (approval_id) WHERE approval_id IS NOT NULL;

-- Ids of the grants that were always_allow rows: ULID-shaped (26 characters, sorting
-- before every real ULID) and short ids that no generated short id can take (they
-- contain a 0, which the short-id alphabet leaves out).
INSERT INTO grants (id, short_id, agent, tool, scope, pattern, granted_by, granted_via,
                    reason, approval_id, created_at)
    SELECT printf('00000000000000%012d', rowid), printf('aa%06d', rowid), agent, tool, 'tool',
           NULL, added_by, added_via, 'Always allow (recorded before grants had scopes)',
           approval_id, added_at
    FROM always_allow;
DROP TABLE always_allow;

CREATE TABLE grant_offers (
    approval_id TEXT PRIMARY KEY REFERENCES approvals (id),
    command     TEXT,                            -- a shell-like tool's exact command
    prefix      TEXT,                            -- the prefix offered for it, if any
    suggest     TEXT CHECK (suggest IN ('tool', 'exact', 'prefix')),
    streak      INTEGER NOT NULL DEFAULT 0       -- approvals in a row behind the suggestion
);

CREATE TABLE proposals (
    id              TEXT PRIMARY KEY,            -- a ULID, also its subject id
    short_id        TEXT NOT NULL UNIQUE,
    agent           TEXT NOT NULL,
    direction       TEXT NOT NULL CHECK (direction IN ('promote', 'demote')),
    from_tier       TEXT NOT NULL,
    to_tier         TEXT NOT NULL,
    reason          TEXT NOT NULL,
    measures        TEXT NOT NULL,               -- JSON: the figures behind it
    status          TEXT NOT NULL CHECK (status IN ('open', 'approved', 'declined', 'superseded')),
    created_at      INTEGER NOT NULL,
    decided_by      TEXT,
    decided_via     TEXT,
    decided_at      INTEGER,
    decision_reason TEXT
);
-- One open proposal per agent at a time.
CREATE UNIQUE INDEX proposals_open ON proposals (agent) WHERE status = 'open';
CREATE INDEX proposals_by_agent ON proposals (agent, status, decided_at);

CREATE TABLE agent_handles (
    id    TEXT PRIMARY KEY,                      -- a ULID
    agent TEXT NOT NULL UNIQUE
);

CREATE TABLE trust_state (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
