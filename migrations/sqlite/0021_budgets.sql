-- Budgets (credit gating): what requests cost, and which budget warnings were given.
--
-- 1. A request's declared cost (`cost`, from its submit body), the cost its result
--    reported (`reported_cost`, which takes the place of the declared one), and when
--    it began to count against budgets (`spent_at`: when it was allowed or approved,
--    or when a result reported a cost for it): the record `spend_days` (3.) is counted
--    from again when the budget's time zone changes.
-- 2. `budget_warnings`: one row per budget and period whose warning share was reached,
--    so owners are told once (`budget` like `everyone:day` or `agent:mailer:month`,
--    `period` like `2026-11-26` or `2026-11`, in the budget's time zone).
ALTER TABLE approvals ADD COLUMN cost REAL;
ALTER TABLE approvals ADD COLUMN reported_cost REAL;
ALTER TABLE approvals ADD COLUMN spent_at INTEGER;
CREATE INDEX approvals_spend ON approvals (spent_at, agent, cost, reported_cost)
    WHERE spent_at IS NOT NULL;
CREATE INDEX tasks_spend ON tasks (finished_at, agent, cost_usd)
    WHERE cost_usd IS NOT NULL;

CREATE TABLE budget_warnings (
    budget TEXT NOT NULL,
    period TEXT NOT NULL,
    spent  REAL NOT NULL,
    at     INTEGER NOT NULL,
    PRIMARY KEY (budget, period)
) WITHOUT ROWID;

-- 3. `spend_days`: what was spent, per day (in the budget's time zone) and agent, kept in
--    the transaction of each change, so a check sums at most a month of days instead of
--    every costed request. `budget_state` names the time zone its days are in; when
--    `[budgets] timezone` changes (or budgets are turned on), the current month's days
--    are counted again from `approvals`. Tasks' costs are summed from `tasks` directly.
CREATE TABLE spend_days (
    day    TEXT NOT NULL,
    agent  TEXT NOT NULL,
    amount REAL NOT NULL,
    PRIMARY KEY (day, agent)
) WITHOUT ROWID;
CREATE TABLE budget_state (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
