-- On a platform that cannot edit a message (WhatsApp), a card's outcome goes as a reply to
-- it, once: taken (set) just before it is sent, so a restart or a later change of the
-- card (an approved request that ran) never sends it again; put back (NULL) when the
-- platform said it sent nothing.
ALTER TABLE cards ADD COLUMN outcome_at INTEGER;
