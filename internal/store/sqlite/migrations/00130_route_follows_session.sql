-- A route's liveness follows its session in the session's own transaction:
-- when a session leaves RUNNING, by whatever path (a user's terminate, its
-- kernel's exit, a lost agent, a time limit), the routes that serve
-- through it and were HEALTHY, DEGRADED or UNHEALTHY go TERMINATING
-- (RunningRoute FAILURE, the controller's own move) with a history entry,
-- in the same transaction. No reader sees a HEALTHY route whose session
-- has ended, not even until the controller's next pass.
--
-- The history entry is written first, while the route still shows the
-- status it leaves.

-- +goose Up
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

-- +goose Down
DROP TRIGGER route_follows_session;
