-- A removed resource group (DELETE /v1/resource-groups/{name}): a DRAINING
-- group that held no live session and no ALIVE or LOST agent, deleted at
-- removed_at. The row stays, because ended sessions and departed agents
-- still name it, but every read of groups skips it, and neither an upsert,
-- a session nor an agent registration takes it again. The state column
-- keeps DRAINING: SQLite cannot widen its CHECK without rebuilding a table
-- that sessions and agents reference, so REMOVED is this column being set.

-- +goose Up
ALTER TABLE resource_groups ADD COLUMN removed_at {{time}};

-- +goose Down
ALTER TABLE resource_groups DROP COLUMN removed_at;
