-- An idempotency key stands for the whole content it was first sent with (issue 18).
--
-- Each row stored under an idempotency key keeps the SHA-256 of its content's canonical
-- JSON (src/store/mod.rs, `content_hash`): a request's tool, args, summary, confidence,
-- environment, ttl and task; an event's type, phase, step, warnings, errors, artifacts and
-- result handling. A repeat of the key with the same hash gets the first answer; with
-- another hash it is refused (`409 idempotency_conflict`). Rows stored before this
-- migration have no hash (NULL): a repeat of their key is compared as before (a request's
-- tool and args, an event's type, phase and step). Runs need no hash: their title and
-- workflow, compared as they were, are all a run's start carries.
ALTER TABLE approvals ADD COLUMN content_hash TEXT;
ALTER TABLE run_events ADD COLUMN content_hash TEXT;
