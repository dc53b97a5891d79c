-- A route remembers whether it ever served (was HEALTHY), because the end
-- of one that never did is a failed start for the deployment's backoff:
-- an image that starts and dies before passing its checks would
-- otherwise be replaced at once, in a hot loop.
--
-- The session trigger of 00130 now moves only routes that served. One
-- that never did is not in any proxy table (only HEALTHY routes are), so
-- nothing reads it as a replica; the controller takes it out on its next
-- pass, by a guarded move that counts the failed start exactly once.
-- Routes already stored count as served when they are HEALTHY or their
-- history shows them HEALTHY once.

-- +goose Up
ALTER TABLE deployment_routes ADD COLUMN served INTEGER NOT NULL DEFAULT 0 CHECK (served IN (0, 1));
UPDATE deployment_routes SET served = 1
WHERE status = 'HEALTHY' OR id IN (SELECT route_id FROM deployment_history WHERE to_status = 'HEALTHY');

DROP TRIGGER route_follows_session;
-- +goose StatementBegin
CREATE TRIGGER route_follows_session AFTER UPDATE OF status ON sessions
WHEN OLD.status = 'RUNNING' AND NEW.status <> 'RUNNING' BEGIN
    INSERT INTO deployment_history (deployment_id, route_id, at, handler, result, from_status, to_status, message, attempt)
    SELECT r.deployment_id, r.id, NEW.status_changed_at, 'RunningRoute', 'FAILURE', r.status, 'TERMINATING',
           'its session is ' || NEW.status || CASE WHEN NEW.status_reason <> '' THEN ': ' || NEW.status_reason ELSE '' END, 1
    FROM deployment_routes r
    WHERE r.session_id = NEW.id AND r.status IN ('HEALTHY', 'DEGRADED', 'UNHEALTHY') AND r.served = 1
    ORDER BY r.id;
    UPDATE deployment_routes
    SET status = 'TERMINATING', status_changed_at = NEW.status_changed_at,
        status_reason = 'its session is ' || NEW.status || CASE WHEN NEW.status_reason <> '' THEN ': ' || NEW.status_reason ELSE '' END
    WHERE session_id = NEW.id AND status IN ('HEALTHY', 'DEGRADED', 'UNHEALTHY') AND served = 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER route_follows_session;
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
ALTER TABLE deployment_routes DROP COLUMN served;
