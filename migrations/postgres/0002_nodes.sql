-- The gatebot nodes that share this database, each renewing its row while it runs:
-- `gatebot nodes` and /v1/health list them, and warn when they run different versions
-- or configurations. As migrations/sqlite/0029_nodes.sql.
CREATE TABLE nodes (
    name        text NOT NULL PRIMARY KEY,    -- [store] node, or the host's name
    run         text NOT NULL,                -- this run of the node (new at each start)
    version     text NOT NULL,
    config_hash text NOT NULL,                -- of its bot.toml as loaded
    started_at  bigint NOT NULL,              -- ms
    seen_at     bigint NOT NULL               -- ms, the database's clock
);

-- Work one node at a time does (chat platforms, timers): held by one node's run until
-- expires_at (the database's clock) unless renewed. Each new holder gets the next fence,
-- and a write made under an older fence is refused.
CREATE TABLE leases (
    name       text NOT NULL PRIMARY KEY,
    holder     text NOT NULL,                 -- nodes.run
    node       text NOT NULL,                 -- nodes.name
    fence      bigint NOT NULL,
    expires_at bigint NOT NULL                -- ms, the database's clock
);

-- The database's clock in ms since the epoch, as every node reads it: leases and
-- heartbeats are timed by it, never by a node's own clock (clock_timestamp(): the time
-- of the statement, not of its transaction's start).
CREATE VIEW db_clock AS
    SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now_ms;
