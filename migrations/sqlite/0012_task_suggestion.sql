-- The classifier model's suggestion for a task (docs/inbox.md, "The model classifier").
--
-- A model's `execution_prompt` is model output, not the owner's words: the task's prompt
-- quotes it after the owner's words, marked as a suggestion, and the owner sees it on the
-- task's card (before queueing a level-1 task) and in `gatebot task status`. NULL for tasks
-- the keyword classifier made, and for tasks made before (their prompts were not changed).
ALTER TABLE tasks ADD COLUMN suggestion TEXT;
