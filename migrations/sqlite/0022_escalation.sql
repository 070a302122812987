-- Escalation (docs/teams.md): when a routed request's next escalation level is due (Unix
-- ms; NULL: none left). The housekeeping pass reaches due levels: the level's people are
-- asked too (the stored route grows, its chats join the audience) and this moves on to the
-- next level, in one transaction, so a restart neither skips nor repeats one.
ALTER TABLE approvals ADD COLUMN next_escalation_at INTEGER;
CREATE INDEX approvals_escalation_due ON approvals (next_escalation_at)
    WHERE next_escalation_at IS NOT NULL;
