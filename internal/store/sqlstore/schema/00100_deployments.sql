-- Model-serving deployments (seed 001's endpoints) and their routes, one
-- inference session each. A route's session_id is written before its
-- session is created (so a crash between leaves a route that names a
-- missing session, which the controller ends, never an orphan session), so
-- it is not a foreign key; readers join it to sessions for liveness.
-- spec and health are JSON (domain.DeploymentSpec, domain.HealthCheck).
-- start_failures and next_start_at are the failed-start backoff, kept here
-- so a restarted manager goes on backing off.

-- +goose Up
CREATE TABLE deployments (
    id                TEXT     PRIMARY KEY CHECK (id <> ''),
    name              TEXT     NOT NULL CHECK (name <> ''),
    owner_user        TEXT     NOT NULL CHECK (owner_user <> ''),
    owner_project     TEXT     NOT NULL,
    owner_domain      TEXT     NOT NULL,
    status            TEXT     NOT NULL CHECK (status IN ('PENDING', 'CREATED', 'SCALING', 'READY', 'DEPLOYING', 'DESTROYING', 'DESTROYED')),
    status_changed_at {{time}} NOT NULL,
    created_at        {{time}} NOT NULL,
    replicas          INTEGER  NOT NULL CHECK (replicas >= 0),
    spec              TEXT     NOT NULL,
    health            TEXT     NOT NULL,
    start_failures    INTEGER  NOT NULL DEFAULT 0 CHECK (start_failures >= 0),
    next_start_at     {{time}}
){{strict}};
CREATE UNIQUE INDEX deployments_live_name ON deployments (owner_user, name) WHERE status <> 'DESTROYED';

CREATE TABLE deployment_routes (
    id                TEXT     PRIMARY KEY CHECK (id <> ''),
    deployment_id     TEXT     NOT NULL REFERENCES deployments (id),
    session_id        TEXT     NOT NULL UNIQUE,
    status            TEXT     NOT NULL CHECK (status IN ('PROVISIONING', 'HEALTHY', 'UNHEALTHY', 'DEGRADED', 'TERMINATING', 'TERMINATED', 'FAILED_TO_START')),
    status_reason     TEXT     NOT NULL DEFAULT '',
    status_changed_at {{time}} NOT NULL,
    created_at        {{time}} NOT NULL,
    successes         INTEGER  NOT NULL DEFAULT 0 CHECK (successes >= 0),
    failures          INTEGER  NOT NULL DEFAULT 0 CHECK (failures >= 0),
    checked_at        {{time}},
    endpoint          TEXT     NOT NULL DEFAULT ''
){{strict}};
CREATE INDEX deployment_routes_by_deployment ON deployment_routes (deployment_id, created_at);

CREATE TABLE deployment_history (
    id            {{serial}},
    deployment_id TEXT     NOT NULL REFERENCES deployments (id),
    route_id      TEXT     NOT NULL DEFAULT '',
    at            {{time}} NOT NULL,
    handler       TEXT     NOT NULL,
    result        TEXT     NOT NULL CHECK (result IN ('SUCCESS', 'FAILURE', 'STALE')),
    from_status   TEXT     NOT NULL,
    to_status     TEXT     NOT NULL,
    message       TEXT     NOT NULL,
    attempt       INTEGER  NOT NULL CHECK (attempt >= 1)
){{strict}};
CREATE INDEX deployment_history_by_deployment ON deployment_history (deployment_id, id);

-- +goose Down
DROP TABLE deployment_history;
DROP TABLE deployment_routes;
DROP TABLE deployments;
