-- The change feed: one row per status change of a session or a kernel,
-- written by triggers in the same transaction as the change, so every path
-- that moves a status (now or later) is recorded and nothing is recorded
-- for a change that rolled back. The API streams it to watchers
-- (GET /v1/events).
--
-- seq is the feed position. SQLite has one writer at a time, so rows
-- commit in seq order and a reader never sees a gap that fills later.
-- owner_user is copied from the session so a user's feed needs no join.
--
-- Nothing but the position is indexed: a follower reads the short range
-- after its position, and filters by owner or session scan that range.
-- Indexes on owner and session more than doubled the cost of applying a
-- plan of ten thousand sessions (BenchmarkApplyPlan).

-- +goose Up
CREATE TABLE status_changes (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT    NOT NULL CHECK (kind IN ('session', 'kernel')),
    session_id  TEXT    NOT NULL,
    kernel_id   TEXT    NOT NULL, -- '' for a session's change
    owner_user  TEXT    NOT NULL,
    from_status TEXT    NOT NULL, -- '' when the session was created
    to_status   TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL, -- a kernel's agent, '' when none
    exit_code   INTEGER,
    at          INTEGER NOT NULL
) STRICT;

-- +goose StatementBegin
CREATE TRIGGER session_created AFTER INSERT ON sessions BEGIN
    INSERT INTO status_changes (kind, session_id, kernel_id, owner_user, from_status, to_status, reason,
                                agent_id, exit_code, at)
    VALUES ('session', NEW.id, '', NEW.owner_user, '', NEW.status, NEW.status_reason, '', NULL,
            NEW.status_changed_at);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER session_status_changed AFTER UPDATE OF status ON sessions
WHEN OLD.status IS NOT NEW.status BEGIN
    INSERT INTO status_changes (kind, session_id, kernel_id, owner_user, from_status, to_status, reason,
                                agent_id, exit_code, at)
    VALUES ('session', NEW.id, '', NEW.owner_user, OLD.status, NEW.status, NEW.status_reason, '', NULL,
            NEW.status_changed_at);
END;
-- +goose StatementEnd

-- A kernel sent back to PENDING loses its agent; the change names the
-- agent it left.
-- +goose StatementBegin
CREATE TRIGGER kernel_status_changed AFTER UPDATE OF status ON kernels
WHEN OLD.status IS NOT NEW.status BEGIN
    INSERT INTO status_changes (kind, session_id, kernel_id, owner_user, from_status, to_status, reason,
                                agent_id, exit_code, at)
    SELECT 'kernel', NEW.session_id, NEW.id, s.owner_user, OLD.status, NEW.status, NEW.status_reason,
           COALESCE(NEW.agent_id, OLD.agent_id, ''), NEW.exit_code, NEW.status_changed_at
    FROM sessions s WHERE s.id = NEW.session_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER kernel_status_changed;
DROP TRIGGER session_status_changed;
DROP TRIGGER session_created;
DROP TABLE status_changes;
