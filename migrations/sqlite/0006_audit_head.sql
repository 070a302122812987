-- The audit chain's head (see src/store/audit.rs): the last row's seq and hash and how
-- many rows the trail holds. A trigger moves it in the same statement as every append,
-- whoever writes the row, and the next row chains onto it, so rows cut off the end (even
-- with sqlite_sequence lowered too) and an emptied table show in `gatebot audit verify`.
-- `legacy_rows` rows up to seq `legacy_through` were written before the chain existed
-- (before 0003): they are the only rows that may carry no hash.
CREATE TABLE audit_head (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    seq            INTEGER NOT NULL,
    hash           TEXT,
    rows           INTEGER NOT NULL,
    legacy_rows    INTEGER NOT NULL,
    legacy_through INTEGER NOT NULL
);

INSERT INTO audit_head (id, seq, hash, rows, legacy_rows, legacy_through)
SELECT 1,
       (SELECT COALESCE(MAX(seq), 0) FROM audit),
       (SELECT hash FROM audit ORDER BY seq DESC LIMIT 1),
       (SELECT COUNT(*) FROM audit),
       (SELECT COUNT(*) FROM audit WHERE hash IS NULL AND seq <
           (SELECT COALESCE(MIN(seq), 9223372036854775807) FROM audit WHERE hash IS NOT NULL)),
       (SELECT COALESCE(MAX(seq), 0) FROM audit WHERE hash IS NULL AND seq <
           (SELECT COALESCE(MIN(seq), 9223372036854775807) FROM audit WHERE hash IS NOT NULL));

CREATE TRIGGER audit_head_follows AFTER INSERT ON audit
BEGIN UPDATE audit_head SET seq = NEW.seq, hash = NEW.hash, rows = rows + 1 WHERE id = 1; END;

-- The head's row count only grows, one row per append: hiding rows cut off the end
-- needs these dropped first, and `gatebot audit verify` reports a missing or changed
-- trigger. (Its seq may go back: after someone lowers sqlite_sequence, appends must
-- still work, and the next row, chained onto the old head, shows the cut.)
CREATE TRIGGER audit_head_counts_every_row BEFORE UPDATE ON audit_head
WHEN NEW.id <> OLD.id OR NEW.rows <> OLD.rows + 1
  OR NEW.legacy_rows <> OLD.legacy_rows OR NEW.legacy_through <> OLD.legacy_through
BEGIN SELECT RAISE(ABORT, 'the audit head moves one row at a time'); END;
CREATE TRIGGER audit_head_is_kept BEFORE DELETE ON audit_head
BEGIN SELECT RAISE(ABORT, 'the audit head is kept'); END;

-- Refused attempts, coalesced (see src/engine/refusal.rs): the first attempt of a window
-- (per actor, what was tried, where and why it was refused; a minute) is an
-- `unauthorised_attempt` audit row at once; later ones in the window only count here,
-- and the count becomes one more audit row when the window ends. A window still open at
-- a crash is closed at the next start, so no attempt goes unrecorded.
CREATE TABLE refusal_windows (
    key         TEXT PRIMARY KEY,  -- JSON: actor, kind, channel, transport, reason
    approval_id TEXT,              -- the first attempt's, for the closing row
    actor       TEXT NOT NULL,
    channel     TEXT NOT NULL,
    detail      TEXT NOT NULL,     -- the first attempt's audit detail (JSON)
    first_seq   INTEGER NOT NULL,  -- the first attempt's audit row
    started     INTEGER NOT NULL,  -- when the first attempt came (ms)
    last_at     INTEGER NOT NULL,  -- when the latest came
    repeats     INTEGER NOT NULL   -- attempts after the first, not yet in the trail
);
