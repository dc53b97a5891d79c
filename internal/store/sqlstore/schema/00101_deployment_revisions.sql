-- Rolling updates: a deployment's spec has a revision, the previous
-- spec is kept (JSON, '' for none) while a rollout may still fail back to
-- it, and each route records the revision it runs. max_surge bounds the
-- routes a rollout runs beyond the replicas.

-- +goose Up
ALTER TABLE deployments ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;
ALTER TABLE deployments ADD COLUMN prev_spec TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN max_surge INTEGER NOT NULL DEFAULT 1;
ALTER TABLE deployment_routes ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;

-- +goose Down
ALTER TABLE deployment_routes DROP COLUMN revision;
ALTER TABLE deployments DROP COLUMN max_surge;
ALTER TABLE deployments DROP COLUMN prev_spec;
ALTER TABLE deployments DROP COLUMN revision;
