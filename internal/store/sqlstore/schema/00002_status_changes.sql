-- The change feed: one row per status change of a session or a kernel,
-- written by triggers in the same transaction as the change, so every path
-- that moves a status (now or later) is recorded and nothing is recorded
-- for a change that rolled back. The API streams it to watchers
-- (GET /v1/events).
--
-- Ordering. On SQLite seq is the feed position: it has one writer at a
-- time, so rows commit in seq order and a reader never sees a gap that
-- fills later. On PostgreSQL seq comes from a sequence at insert time, but
-- transactions commit in another order, so a reader following seq could
-- pass a row that commits later with a smaller seq and never see it. The
-- feed position is therefore pos, given after commit: a reader holding an
-- advisory lock numbers every committed row still without one, in seq
-- order, after the highest pos so far (store.Changes does this). Positions
-- only ever grow, and a row is numbered once. Changes of one session or
-- one kernel keep their order: a later change of the same row waits on
-- the row lock of the earlier one, so it is inserted (higher seq) and
-- committed after it.
--
-- PostgreSQL's triggers are per statement over transition tables, so a
-- plan that moves ten thousand kernels costs one INSERT … SELECT, not ten
-- thousand; SQLite's are per row (it has no other kind).
-- owner_user is copied from the session so a user's feed needs no join.
--
-- Nothing but the position is indexed: a follower reads the short range
-- after its position, and filters by owner or session scan that range.
-- Indexes on owner and session more than doubled the cost of applying a
-- plan of ten thousand sessions (BenchmarkApplyPlan).

-- +goose Up
CREATE TABLE status_changes (
    seq         {{serial}},
{{- if .Postgres}}
    pos         BIGINT,
{{- end}}
    kind        TEXT     NOT NULL CHECK (kind IN ('session', 'kernel')),
    session_id  TEXT     NOT NULL,
    kernel_id   TEXT     NOT NULL, -- '' for a session's change
    owner_user  TEXT     NOT NULL,
    from_status TEXT     NOT NULL, -- '' when the session was created
    to_status   TEXT     NOT NULL,
    reason      TEXT     NOT NULL,
    agent_id    TEXT     NOT NULL, -- a kernel's agent, '' when none
    exit_code   INTEGER,
    at          {{time}} NOT NULL
){{strict}};
{{- if .Postgres}}
-- Both indexes are partial so that the insert in a writer's transaction
-- touches only the small one of rows waiting for a position.
CREATE UNIQUE INDEX status_changes_by_pos ON status_changes (pos) WHERE pos IS NOT NULL;
CREATE INDEX status_changes_unnumbered ON status_changes (seq) WHERE pos IS NULL;

-- +goose StatementBegin
CREATE FUNCTION status_changes_session_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO status_changes (kind, session_id, kernel_id, owner_user, from_status, to_status, reason,
                                agent_id, exit_code, at)
    SELECT 'session', n.id, '', n.owner_user, '', n.status, n.status_reason, '', NULL, n.status_changed_at
    FROM new_rows n ORDER BY n.id;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION status_changes_session_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO status_changes (kind, session_id, kernel_id, owner_user, from_status, to_status, reason,
                                agent_id, exit_code, at)
    SELECT 'session', n.id, '', n.owner_user, o.status, n.status, n.status_reason, '', NULL, n.status_changed_at
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE o.status <> n.status ORDER BY n.id;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- A kernel sent back to PENDING loses its agent; the change names the
-- agent it left.
-- +goose StatementBegin
CREATE FUNCTION status_changes_kernel_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO status_changes (kind, session_id, kernel_id, owner_user, from_status, to_status, reason,
                                agent_id, exit_code, at)
    SELECT 'kernel', n.session_id, n.id, s.owner_user, o.status, n.status, n.status_reason,
           COALESCE(n.agent_id, o.agent_id, ''), n.exit_code, n.status_changed_at
    FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN sessions s ON s.id = n.session_id
    WHERE o.status <> n.status ORDER BY n.session_id, n.cluster_idx;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER session_created AFTER INSERT ON sessions
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION status_changes_session_created();
CREATE TRIGGER session_status_changed AFTER UPDATE ON sessions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION status_changes_session_changed();
CREATE TRIGGER kernel_status_changed AFTER UPDATE ON kernels
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION status_changes_kernel_changed();
{{- else}}

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
{{- end}}

-- +goose Down
DROP TRIGGER kernel_status_changed{{if .Postgres}} ON kernels{{end}};
DROP TRIGGER session_status_changed{{if .Postgres}} ON sessions{{end}};
DROP TRIGGER session_created{{if .Postgres}} ON sessions{{end}};
{{- if .Postgres}}
DROP FUNCTION status_changes_kernel_changed();
DROP FUNCTION status_changes_session_changed();
DROP FUNCTION status_changes_session_created();
{{- end}}
DROP TABLE status_changes;
