-- Time limits (like SLURM's --time) and idle timeouts. A session's
-- time_limit_ns is fixed at submission, the group default filled in;
-- 0 means none. last_activity is when the owner last used a running
-- session (proxied traffic, logs), written at most every ~30 s per
-- manager, so an idle timeout is good to that granularity. The expiry
-- pass reads both with one query over RUNNING sessions.

-- +goose Up
ALTER TABLE sessions ADD COLUMN time_limit_ns {{bigint}} NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN last_activity {{time}};
ALTER TABLE resource_groups ADD COLUMN default_time_limit_ns {{bigint}} NOT NULL DEFAULT 0;
ALTER TABLE resource_groups ADD COLUMN max_time_limit_ns {{bigint}} NOT NULL DEFAULT 0;
ALTER TABLE resource_groups ADD COLUMN idle_timeout_ns {{bigint}} NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE resource_groups DROP COLUMN idle_timeout_ns;
ALTER TABLE resource_groups DROP COLUMN max_time_limit_ns;
ALTER TABLE resource_groups DROP COLUMN default_time_limit_ns;
ALTER TABLE sessions DROP COLUMN last_activity;
ALTER TABLE sessions DROP COLUMN time_limit_ns;
