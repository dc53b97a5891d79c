-- A session's name is unique among its owner's live sessions, so a name
-- can stand for the session in every verb. The store checks it in the
-- creating transaction under a lock on the name; this index is the
-- backstop that no path around that check can break.
--
-- Live sessions that already share a name keep the oldest one's name; the
-- others get their id's first 8 characters appended, so the index can be
-- built on any existing database.

-- +goose Up
UPDATE sessions SET name = name || '-' || substr(id, 1, 8)
WHERE name <> '' AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR')
  AND EXISTS (SELECT 1 FROM sessions o
              WHERE o.owner_user = sessions.owner_user AND o.name = sessions.name
                AND o.status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR')
                AND (o.created_at < sessions.created_at
                     OR (o.created_at = sessions.created_at AND o.id < sessions.id)));
CREATE UNIQUE INDEX sessions_live_name ON sessions (owner_user, name)
WHERE name <> '' AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR');

-- +goose Down
DROP INDEX sessions_live_name;
