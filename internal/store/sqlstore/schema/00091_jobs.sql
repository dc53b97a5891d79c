-- Jobs: sessions submitted separately but scheduled as one gang of at
-- least min_available members (seed 004), with seed 003's application
-- states. A session names its job in sessions.job_id, fixed at creation.
-- Times are Unix nanoseconds. job_history keeps every state change.

-- +goose Up
CREATE TABLE jobs (
    id                TEXT       PRIMARY KEY CHECK (id <> ''),
    name              TEXT       NOT NULL,
    owner_user        TEXT       NOT NULL,
    owner_project     TEXT       NOT NULL,
    owner_domain      TEXT       NOT NULL,
    min_available     {{bigint}} NOT NULL CHECK (min_available >= 1),
    permit_timeout_ns {{bigint}} NOT NULL CHECK (permit_timeout_ns >= 0),
    failure_policy    TEXT       NOT NULL CHECK (failure_policy IN ('wait', 'fail')),
    state             TEXT       NOT NULL,
    state_reason      TEXT       NOT NULL DEFAULT '',
    state_changed_ns  {{bigint}} NOT NULL,
    created_ns        {{bigint}} NOT NULL
){{strict}};
CREATE INDEX jobs_by_owner ON jobs (owner_user, created_ns);
CREATE INDEX jobs_by_state ON jobs (state);

CREATE TABLE job_history (
    id         {{serial}},
    job_id     TEXT       NOT NULL REFERENCES jobs (id),
    at_ns      {{bigint}} NOT NULL,
    event      TEXT       NOT NULL,
    from_state TEXT       NOT NULL,
    to_state   TEXT       NOT NULL,
    message    TEXT       NOT NULL
){{strict}};
CREATE INDEX job_history_by_job ON job_history (job_id, id);

ALTER TABLE sessions ADD COLUMN job_id TEXT REFERENCES jobs (id);
CREATE INDEX sessions_by_job ON sessions (job_id, status);

-- +goose Down
DROP INDEX sessions_by_job;
ALTER TABLE sessions DROP COLUMN job_id;
DROP TABLE job_history;
DROP TABLE jobs;
