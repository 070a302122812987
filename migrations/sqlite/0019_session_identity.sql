-- Who a sign-in link from a chat was asked for, as the platform knows them
-- ("telegram:111", "slack:U0AAA"; NULL for `gatebot dashboard login` on the control
-- socket). The session started with the link keeps it: while it lasts, that identity
-- must still be one of its platform's approvers, or the session ends at its next use.
ALTER TABLE dashboard_links ADD COLUMN identity TEXT;
ALTER TABLE dashboard_sessions ADD COLUMN identity TEXT;
