-- A route's liveness follows its session in the session's own transaction:
-- when a session leaves RUNNING, by whatever path (a user's terminate, its
-- kernel's exit, a lost agent, a time limit), the routes that serve
-- through it and were HEALTHY, DEGRADED or UNHEALTHY go TERMINATING
-- (RunningRoute FAILURE, the controller's own move) with a history entry,
-- in the same transaction. No reader sees a HEALTHY route whose session
-- has ended, not even until the controller's next pass.
--
-- On PostgreSQL the trigger is per statement over transition tables, as
-- the change feed's triggers (00002), so a plan moving thousands of
-- sessions pays one join, which the RUNNING filter empties for every move
-- but a session's end. The routes are locked first (after the sessions,
-- the order every writer keeps), so the history entry, written before the
-- move, names the status the route really leaves. SQLite's trigger is per
-- row, and its one writer needs no lock: the history entry is written
-- first, while the route still shows the status it leaves.

-- +goose Up
{{- if .Postgres}}
-- +goose StatementBegin
CREATE FUNCTION route_follows_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM deployment_routes r
    WHERE r.session_id IN (SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
                           WHERE o.status = 'RUNNING' AND n.status <> 'RUNNING')
    ORDER BY r.id FOR NO KEY UPDATE;
    INSERT INTO deployment_history (deployment_id, route_id, at, handler, result, from_status, to_status, message, attempt)
    SELECT r.deployment_id, r.id, n.status_changed_at, 'RunningRoute', 'FAILURE', r.status, 'TERMINATING',
           'its session is ' || n.status || CASE WHEN n.status_reason <> '' THEN ': ' || n.status_reason ELSE '' END, 1
    FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN deployment_routes r ON r.session_id = n.id
    WHERE o.status = 'RUNNING' AND n.status <> 'RUNNING' AND r.status IN ('HEALTHY', 'DEGRADED', 'UNHEALTHY')
    ORDER BY r.id;
    UPDATE deployment_routes r
    SET status = 'TERMINATING', status_changed_at = n.status_changed_at,
        status_reason = 'its session is ' || n.status || CASE WHEN n.status_reason <> '' THEN ': ' || n.status_reason ELSE '' END
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE r.session_id = n.id AND o.status = 'RUNNING' AND n.status <> 'RUNNING'
      AND r.status IN ('HEALTHY', 'DEGRADED', 'UNHEALTHY');
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER route_follows_session AFTER UPDATE ON sessions
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION route_follows_session();
{{- else}}
-- +goose StatementBegin
CREATE TRIGGER route_follows_session AFTER UPDATE OF status ON sessions
WHEN OLD.status = 'RUNNING' AND NEW.status <> 'RUNNING' BEGIN
    INSERT INTO deployment_history (deployment_id, route_id, at, handler, result, from_status, to_status, message, attempt)
    SELECT r.deployment_id, r.id, NEW.status_changed_at, 'RunningRoute', 'FAILURE', r.status, 'TERMINATING',
           'its session is ' || NEW.status || CASE WHEN NEW.status_reason <> '' THEN ': ' || NEW.status_reason ELSE '' END, 1
    FROM deployment_routes r
    WHERE r.session_id = NEW.id AND r.status IN ('HEALTHY', 'DEGRADED', 'UNHEALTHY')
    ORDER BY r.id;
    UPDATE deployment_routes
    SET status = 'TERMINATING', status_changed_at = NEW.status_changed_at,
        status_reason = 'its session is ' || NEW.status || CASE WHEN NEW.status_reason <> '' THEN ': ' || NEW.status_reason ELSE '' END
    WHERE session_id = NEW.id AND status IN ('HEALTHY', 'DEGRADED', 'UNHEALTHY');
END;
-- +goose StatementEnd
{{- end}}

-- +goose Down
DROP TRIGGER route_follows_session{{if .Postgres}} ON sessions{{end}};
{{- if .Postgres}}
DROP FUNCTION route_follows_session();
{{- end}}
