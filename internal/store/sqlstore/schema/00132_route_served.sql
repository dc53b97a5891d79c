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
ALTER TABLE deployment_routes ADD COLUMN served {{bool "served" false}};
UPDATE deployment_routes SET served = {{sqlTrue}}
WHERE status = 'HEALTHY' OR id IN (SELECT route_id FROM deployment_history WHERE to_status = 'HEALTHY');

{{if .Postgres -}}
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION route_follows_session() RETURNS trigger LANGUAGE plpgsql AS $$
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
      AND r.served
    ORDER BY r.id;
    UPDATE deployment_routes r
    SET status = 'TERMINATING', status_changed_at = n.status_changed_at,
        status_reason = 'its session is ' || n.status || CASE WHEN n.status_reason <> '' THEN ': ' || n.status_reason ELSE '' END
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE r.session_id = n.id AND o.status = 'RUNNING' AND n.status <> 'RUNNING'
      AND r.status IN ('HEALTHY', 'DEGRADED', 'UNHEALTHY') AND r.served;
    RETURN NULL;
END $$;
-- +goose StatementEnd
{{- else -}}
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
{{- end}}

-- +goose Down
{{if .Postgres -}}
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION route_follows_session() RETURNS trigger LANGUAGE plpgsql AS $$
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
{{- else -}}
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
{{- end}}
ALTER TABLE deployment_routes DROP COLUMN served;
