-- Whether an agent runs a session's own command (domain.Agent.AllowsCommand),
-- as it said when it registered. The API reads it at submit to refuse a
-- command no agent of the group would run. Agents of earlier releases
-- register without it and read back as not allowing.

-- +goose Up
ALTER TABLE agents ADD COLUMN allows_command {{bool "allows_command" false}};

-- +goose Down
ALTER TABLE agents DROP COLUMN allows_command;
