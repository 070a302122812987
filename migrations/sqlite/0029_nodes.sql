-- The gatebot nodes that use this database (one on SQLite; several share a PostgreSQL
-- one), each renewing its row while it runs: `gatebot nodes` and /v1/health list them,
-- and warn when they run different versions or configurations.
CREATE TABLE nodes (
    name        TEXT NOT NULL PRIMARY KEY,    -- [store] node, or the host's name
    run         TEXT NOT NULL,                -- this run of the node (new at each start)
    version     TEXT NOT NULL,
    config_hash TEXT NOT NULL,                -- of its bot.toml as loaded
    started_at  INTEGER NOT NULL,             -- ms
    seen_at     INTEGER NOT NULL              -- ms, the database's clock
) WITHOUT ROWID;

-- Work one node at a time does (chat platforms, timers): held by one node's run until
-- expires_at (the database's clock) unless renewed. Each new holder gets the next fence,
-- and a write made under an older fence is refused.
CREATE TABLE leases (
    name       TEXT NOT NULL PRIMARY KEY,
    holder     TEXT NOT NULL,                 -- nodes.run
    node       TEXT NOT NULL,                 -- nodes.name
    fence      INTEGER NOT NULL,
    expires_at INTEGER NOT NULL               -- ms, the database's clock
) WITHOUT ROWID;

-- The database's clock in ms since the epoch, as every node reads it: leases and
-- heartbeats are timed by it, never by a node's own clock.
CREATE VIEW db_clock AS
    SELECT CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) AS now_ms;
