-- The dashboard's history search: a full-text index of what a search looks in (a
-- request's short id, agent, tool, summary, arguments and the decision's reason), cut
-- into trigrams so any part of a word of 3+ characters is found without reading every
-- request. The index keeps no copy of the text (contentless); the rows' own columns are
-- what a search finally compares: the index only narrows which rows it reads.
--
-- Requests are indexed after they are written, in batches (`store::history`), not by
-- a trigger: FTS5 flushes its pending terms at every statement a trigger runs in, which
-- made each indexed request cost ~80 µs on the submit path instead of ~14 µs in a batch.
-- What is not indexed yet is found anyway: the requests past `indexed_through`, and
-- those changed since they were indexed (`approvals_search_stale`), are read directly.

CREATE VIRTUAL TABLE approvals_search USING fts5(
    text, content = '', contentless_delete = 1, tokenize = 'trigram'
);

CREATE TABLE approvals_search_state (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_through INTEGER NOT NULL    -- the highest approvals rowid indexed
);
INSERT INTO approvals_search_state (id, indexed_through) VALUES (1, 0);

-- Requests indexed, then changed (a decision's reason, say): their entries are stale.
CREATE TABLE approvals_search_stale (
    approval_rowid INTEGER PRIMARY KEY
);

CREATE TRIGGER approvals_search_stale
AFTER UPDATE OF short_id, agent, tool, summary, args, decision_reason ON approvals
WHEN new.rowid <= (SELECT indexed_through FROM approvals_search_state WHERE id = 1)
BEGIN
    INSERT OR IGNORE INTO approvals_search_stale (approval_rowid) VALUES (new.rowid);
END;
