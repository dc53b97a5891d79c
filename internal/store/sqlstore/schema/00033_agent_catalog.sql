-- The images an agent's runtime can run at all, as it reports them at
-- registration: exact names and "prefix*" patterns (domain.Agent.Catalog).
-- Empty for runtimes that pull from registries and so may run any image.
-- The API refuses a session whose image no agent of its group could run.

-- +goose Up
ALTER TABLE agents ADD COLUMN catalog {{json}} NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE agents DROP COLUMN catalog;
