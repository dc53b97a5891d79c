-- Autoscaling: a deployment's rule (JSON domain.Autoscale, '' for none)
-- and when it last changed the replicas; and the load each manager's
-- proxy measured per deployment (average requests in flight over its
-- latest report interval), one row per manager, replaced at each report.

-- +goose Up
ALTER TABLE deployments ADD COLUMN autoscale TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN scaled_at {{time}};
CREATE TABLE deployment_load (
    deployment_id TEXT     NOT NULL REFERENCES deployments (id),
    manager       TEXT     NOT NULL CHECK (manager <> ''),
    inflight      {{real}} NOT NULL CHECK (inflight >= 0),
    at            {{time}} NOT NULL,
    PRIMARY KEY (deployment_id, manager)
){{strict}};

-- +goose Down
DROP TABLE deployment_load;
ALTER TABLE deployments DROP COLUMN scaled_at;
ALTER TABLE deployments DROP COLUMN autoscale;
