-- Sokovan-Go schema, PostgreSQL flavour. Slot vectors are JSONB objects
-- keyed by slot name with base-unit integer strings (see
-- internal/store/internal/codec); statuses are stored by name.
--
-- Locking rules every write follows, so concurrent managers cannot
-- deadlock or double-book: session rows are locked before agent rows, each
-- set in id order; a kernel row is written only while its session row is
-- locked; an agent's occupied slots are written only while its row is
-- locked.

-- +goose Up
CREATE TABLE resource_groups (
    name                   TEXT    PRIMARY KEY CHECK (name <> ''),
    state                  TEXT    NOT NULL CHECK (state IN ('ACTIVE', 'STOPPED', 'DRAINING')),
    sequencer              TEXT    NOT NULL,
    selector               TEXT    NOT NULL,
    head_of_line           TEXT    NOT NULL CHECK (head_of_line IN ('skip', 'block')),
    max_retries            INTEGER NOT NULL CHECK (max_retries >= 0),
    pending_timeout_ns     BIGINT  NOT NULL CHECK (pending_timeout_ns >= 0),
    scheduled_timeout_ns   BIGINT  NOT NULL CHECK (scheduled_timeout_ns >= 0),
    preparing_timeout_ns   BIGINT  NOT NULL CHECK (preparing_timeout_ns >= 0),
    prepared_timeout_ns    BIGINT  NOT NULL CHECK (prepared_timeout_ns >= 0),
    creating_timeout_ns    BIGINT  NOT NULL CHECK (creating_timeout_ns >= 0),
    terminating_timeout_ns BIGINT  NOT NULL CHECK (terminating_timeout_ns >= 0),
    allowed_types          JSONB   NOT NULL DEFAULT '[]',
    -- Where round-robin selection left off; written by ApplyPlan only.
    rr_cursor              TEXT    NOT NULL DEFAULT ''
);

CREATE TABLE agents (
    id             TEXT        PRIMARY KEY CHECK (id <> ''),
    resource_group TEXT        NOT NULL REFERENCES resource_groups (name),
    address        TEXT        NOT NULL,
    architecture   TEXT        NOT NULL,
    runtime        TEXT        NOT NULL,
    status         TEXT        NOT NULL CHECK (status IN ('ALIVE', 'LOST', 'TERMINATED')),
    schedulable    BOOLEAN     NOT NULL,
    capacity       JSONB       NOT NULL,
    -- Sum of the requests of the kernels on this agent in SCHEDULED through
    -- TERMINATING, and their number; kept in the same transaction as every
    -- kernel status change that reserves or releases.
    occupied       JSONB       NOT NULL,
    max_kernels    INTEGER     NOT NULL CHECK (max_kernels >= 0),
    kernel_count   INTEGER     NOT NULL CHECK (kernel_count >= 0),
    last_heartbeat TIMESTAMPTZ,
    epoch          BIGINT      NOT NULL CHECK (epoch >= 1),
    images         JSONB       NOT NULL,
    labels         JSONB       NOT NULL
);
CREATE INDEX agents_by_group ON agents (resource_group, id);

CREATE TABLE sessions (
    id                TEXT        PRIMARY KEY CHECK (id <> ''),
    name              TEXT        NOT NULL,
    owner_user        TEXT        NOT NULL CHECK (owner_user <> ''),
    owner_project     TEXT        NOT NULL,
    owner_domain      TEXT        NOT NULL,
    type              TEXT        NOT NULL CHECK (type IN ('interactive', 'batch', 'inference')),
    image             TEXT        NOT NULL,
    architecture      TEXT        NOT NULL,
    resource_group    TEXT        NOT NULL REFERENCES resource_groups (name),
    cluster_mode      TEXT        NOT NULL CHECK (cluster_mode IN ('single-node', 'multi-node')),
    cluster_size      INTEGER     NOT NULL CHECK (cluster_size >= 1),
    priority          INTEGER     NOT NULL,
    requested         JSONB       NOT NULL,
    status            TEXT        NOT NULL CHECK (status IN ('PENDING', 'SCHEDULED', 'PREPARING', 'PREPARED',
                          'CREATING', 'RUNNING', 'TERMINATING', 'TERMINATED', 'CANCELLED', 'ERROR')),
    status_reason     TEXT        NOT NULL,
    status_changed_at TIMESTAMPTZ NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL,
    starts_at         TIMESTAMPTZ,
    designated_agents JSONB       NOT NULL,
    designated_strict BOOLEAN     NOT NULL,
    avoid_agents      JSONB       NOT NULL,
    outcome           TEXT        NOT NULL CHECK (outcome IN ('', 'success', 'failure', 'cancelled')),
    command           JSONB       NOT NULL,
    env               JSONB       NOT NULL
);
CREATE INDEX sessions_by_group_status ON sessions (resource_group, status, created_at, id);
CREATE INDEX sessions_by_status ON sessions (status, id);
CREATE INDEX sessions_by_owner ON sessions (owner_user, status);

CREATE TABLE session_dependencies (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    depends_on TEXT NOT NULL REFERENCES sessions (id),
    PRIMARY KEY (session_id, depends_on),
    CHECK (session_id <> depends_on)
);
CREATE INDEX session_dependencies_by_target ON session_dependencies (depends_on);

CREATE TABLE kernels (
    id                TEXT        PRIMARY KEY CHECK (id <> ''),
    session_id        TEXT        NOT NULL REFERENCES sessions (id),
    cluster_role      TEXT        NOT NULL,
    cluster_idx       INTEGER     NOT NULL CHECK (cluster_idx >= 0),
    image             TEXT        NOT NULL,
    architecture      TEXT        NOT NULL,
    requested         JSONB       NOT NULL,
    agent_id          TEXT        REFERENCES agents (id),
    status            TEXT        NOT NULL CHECK (status IN ('PENDING', 'SCHEDULED', 'PREPARING', 'PULLING',
                          'PREPARED', 'CREATING', 'RUNNING', 'TERMINATING', 'TERMINATED', 'CANCELLED', 'ERROR')),
    status_reason     TEXT        NOT NULL,
    status_changed_at TIMESTAMPTZ NOT NULL,
    container_id      TEXT        NOT NULL,
    exit_code         INTEGER,
    UNIQUE (session_id, cluster_idx),
    -- A kernel holding resources is on an agent; a pending one is on none.
    CHECK (CASE status
        WHEN 'PENDING' THEN agent_id IS NULL
        WHEN 'TERMINATED' THEN TRUE WHEN 'CANCELLED' THEN TRUE WHEN 'ERROR' THEN TRUE
        ELSE agent_id IS NOT NULL END)
);
CREATE INDEX kernels_by_agent ON kernels (agent_id, status) WHERE agent_id IS NOT NULL;
CREATE INDEX kernels_by_status ON kernels (status);

CREATE TABLE users (
    id         TEXT        PRIMARY KEY CHECK (id <> ''),
    name       TEXT        NOT NULL UNIQUE CHECK (name <> ''),
    role       TEXT        NOT NULL CHECK (role IN ('admin', 'user')),
    project    TEXT        NOT NULL,
    domain     TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

-- Only hashes of tokens are kept: a copy of this table grants nothing.
CREATE TABLE tokens (
    hash       BYTEA       PRIMARY KEY CHECK (octet_length(hash) >= 16),
    user_id    TEXT        NOT NULL REFERENCES users (id),
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE policies (
    scope                   TEXT    NOT NULL CHECK (scope IN ('user', 'project', 'domain')),
    name                    TEXT    NOT NULL,
    max_slots               JSONB   NOT NULL,
    max_concurrent_sessions INTEGER NOT NULL CHECK (max_concurrent_sessions >= 0),
    max_pending_sessions    INTEGER NOT NULL CHECK (max_pending_sessions >= 0),
    PRIMARY KEY (scope, name)
);

CREATE TABLE scheduling_history (
    id          BIGSERIAL   PRIMARY KEY,
    session_id  TEXT        NOT NULL REFERENCES sessions (id),
    at          TIMESTAMPTZ NOT NULL,
    handler     TEXT        NOT NULL,
    result      TEXT        NOT NULL CHECK (result IN ('SUCCESS', 'NEED_RETRY', 'EXPIRED', 'GIVE_UP', 'SKIPPED')),
    from_status TEXT        NOT NULL,
    to_status   TEXT        NOT NULL,
    message     TEXT        NOT NULL,
    attempt     INTEGER     NOT NULL CHECK (attempt >= 1)
);
CREATE INDEX scheduling_history_by_session ON scheduling_history (session_id, id);

CREATE TABLE session_tries (
    session_id TEXT    NOT NULL REFERENCES sessions (id),
    phase      TEXT    NOT NULL,
    tries      INTEGER NOT NULL CHECK (tries >= 0),
    PRIMARY KEY (session_id, phase)
);

-- +goose Down
DROP TABLE session_tries;
DROP TABLE scheduling_history;
DROP TABLE policies;
DROP TABLE tokens;
DROP TABLE users;
DROP TABLE kernels;
DROP TABLE session_dependencies;
DROP TABLE sessions;
DROP TABLE agents;
DROP TABLE resource_groups;
