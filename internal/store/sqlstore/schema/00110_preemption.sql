-- Priority preemption. A group's policy is off by default (preempt = 0);
-- min run time and window are nanoseconds, budget a count per window.
-- A session's preemptible and requeue are fixed at submission (existing
-- sessions are neither: nothing running today becomes a victim by an
-- upgrade). The outcome column's CHECK cannot be widened in SQLite
-- without rebuilding sessions, so a preempted session is stored as
-- outcome 'failure' with preempted_by set, which reads back as outcome
-- preempted; a reader that predates this column sees failure, the
-- nearest older truth.
--
-- preemptions records each one applied, for the budget and the no-cycle
-- rule (loaded for the group's window), for metrics (work lost) and to
-- link a requeued victim to its new attempt. A victim is preempted at
-- most once, so it is the key.

-- +goose Up
ALTER TABLE resource_groups ADD COLUMN preempt INTEGER NOT NULL DEFAULT 0 CHECK (preempt IN (0, 1));
ALTER TABLE resource_groups ADD COLUMN preempt_min_runtime_ns {{bigint}} NOT NULL DEFAULT 0 CHECK (preempt_min_runtime_ns >= 0);
ALTER TABLE resource_groups ADD COLUMN preempt_budget INTEGER NOT NULL DEFAULT 0 CHECK (preempt_budget >= 0);
ALTER TABLE resource_groups ADD COLUMN preempt_window_ns {{bigint}} NOT NULL DEFAULT 0 CHECK (preempt_window_ns >= 0);
ALTER TABLE sessions ADD COLUMN preemptible INTEGER NOT NULL DEFAULT 0 CHECK (preemptible IN (0, 1));
ALTER TABLE sessions ADD COLUMN requeue INTEGER NOT NULL DEFAULT 0 CHECK (requeue IN (0, 1));
ALTER TABLE sessions ADD COLUMN preempted_by TEXT NOT NULL DEFAULT '';
CREATE TABLE preemptions (
    victim         TEXT       NOT NULL PRIMARY KEY,
    preemptor      TEXT       NOT NULL,
    resource_group TEXT       NOT NULL,
    at             {{time}}   NOT NULL,
    work_lost_ns   {{bigint}} NOT NULL,
    requeued_as    TEXT       NOT NULL DEFAULT ''
){{strict}};
CREATE INDEX preemptions_by_group ON preemptions (resource_group, at);

-- +goose Down
DROP TABLE preemptions;
ALTER TABLE sessions DROP COLUMN preempted_by;
ALTER TABLE sessions DROP COLUMN requeue;
ALTER TABLE sessions DROP COLUMN preemptible;
ALTER TABLE resource_groups DROP COLUMN preempt_window_ns;
ALTER TABLE resource_groups DROP COLUMN preempt_budget;
ALTER TABLE resource_groups DROP COLUMN preempt_min_runtime_ns;
ALTER TABLE resource_groups DROP COLUMN preempt;
