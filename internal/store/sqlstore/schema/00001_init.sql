-- Sokovan-Go schema. Slot vectors are JSON objects keyed by slot name
-- with base-unit integer strings (see internal/store/internal/codec),
-- JSONB on PostgreSQL, TEXT on SQLite; statuses are stored by name. Times
-- are TIMESTAMPTZ on PostgreSQL and INTEGER microseconds since the Unix
-- epoch (UTC) on SQLite, whose tables are STRICT so a wrong type is an
-- error, not a silent conversion.
--
-- Locking rules every PostgreSQL write follows, so concurrent managers
-- cannot deadlock or double-book: session rows are locked before agent
-- rows, each set in id order; a kernel row is written only while its
-- session row is locked; an agent's occupied slots are written only while
-- its row is locked. SQLite has one writer at a time.

-- +goose Up
CREATE TABLE resource_groups (
    name                   TEXT       PRIMARY KEY CHECK (name <> ''),
    state                  TEXT       NOT NULL CHECK (state IN ('ACTIVE', 'STOPPED', 'DRAINING')),
    sequencer              TEXT       NOT NULL,
    selector               TEXT       NOT NULL,
    head_of_line           TEXT       NOT NULL CHECK (head_of_line IN ('skip', 'block')),
    max_retries            INTEGER    NOT NULL CHECK (max_retries >= 0),
    pending_timeout_ns     {{bigint}} NOT NULL CHECK (pending_timeout_ns >= 0),
    scheduled_timeout_ns   {{bigint}} NOT NULL CHECK (scheduled_timeout_ns >= 0),
    preparing_timeout_ns   {{bigint}} NOT NULL CHECK (preparing_timeout_ns >= 0),
    prepared_timeout_ns    {{bigint}} NOT NULL CHECK (prepared_timeout_ns >= 0),
    creating_timeout_ns    {{bigint}} NOT NULL CHECK (creating_timeout_ns >= 0),
    terminating_timeout_ns {{bigint}} NOT NULL CHECK (terminating_timeout_ns >= 0),
    allowed_types          {{json}}   NOT NULL DEFAULT '[]',
    -- Where round-robin selection left off; written by ApplyPlan only.
    rr_cursor              TEXT       NOT NULL DEFAULT ''
){{strict}};

CREATE TABLE agents (
    id             TEXT       PRIMARY KEY CHECK (id <> ''),
    resource_group TEXT       NOT NULL REFERENCES resource_groups (name),
    address        TEXT       NOT NULL,
    architecture   TEXT       NOT NULL,
    runtime        TEXT       NOT NULL,
    status         TEXT       NOT NULL CHECK (status IN ('ALIVE', 'LOST', 'TERMINATED')),
    schedulable    {{bool "schedulable"}},
    capacity       {{json}}   NOT NULL,
    -- Sum of the requests of the kernels on this agent in SCHEDULED through
    -- TERMINATING, and their number; kept in the same transaction as every
    -- kernel status change that reserves or releases.
    occupied       {{json}}   NOT NULL,
    max_kernels    INTEGER    NOT NULL CHECK (max_kernels >= 0),
    kernel_count   INTEGER    NOT NULL CHECK (kernel_count >= 0),
    last_heartbeat {{time}},
    epoch          {{bigint}} NOT NULL CHECK (epoch >= 1),
    images         {{json}}   NOT NULL,
    labels         {{json}}   NOT NULL
){{strict}};
CREATE INDEX agents_by_group ON agents (resource_group, id);

CREATE TABLE sessions (
    id                TEXT     PRIMARY KEY CHECK (id <> ''),
    name              TEXT     NOT NULL,
    owner_user        TEXT     NOT NULL CHECK (owner_user <> ''),
    owner_project     TEXT     NOT NULL,
    owner_domain      TEXT     NOT NULL,
    type              TEXT     NOT NULL CHECK (type IN ('interactive', 'batch', 'inference')),
    image             TEXT     NOT NULL,
    architecture      TEXT     NOT NULL,
    resource_group    TEXT     NOT NULL REFERENCES resource_groups (name),
    cluster_mode      TEXT     NOT NULL CHECK (cluster_mode IN ('single-node', 'multi-node')),
    cluster_size      INTEGER  NOT NULL CHECK (cluster_size >= 1),
    priority          INTEGER  NOT NULL,
    requested         {{json}} NOT NULL,
    status            TEXT     NOT NULL CHECK (status IN ('PENDING', 'SCHEDULED', 'PREPARING', 'PREPARED',
                          'CREATING', 'RUNNING', 'TERMINATING', 'TERMINATED', 'CANCELLED', 'ERROR')),
    status_reason     TEXT     NOT NULL,
    status_changed_at {{time}} NOT NULL,
    created_at        {{time}} NOT NULL,
    starts_at         {{time}},
    designated_agents {{json}} NOT NULL,
    designated_strict {{bool "designated_strict"}},
    avoid_agents      {{json}} NOT NULL,
    outcome           TEXT     NOT NULL CHECK (outcome IN ('', 'success', 'failure', 'cancelled')),
    command           {{json}} NOT NULL,
    env               {{json}} NOT NULL
){{strict}};
CREATE INDEX sessions_by_group_status ON sessions (resource_group, status, created_at, id);
CREATE INDEX sessions_by_status ON sessions (status, id);
CREATE INDEX sessions_by_owner ON sessions (owner_user, status);

CREATE TABLE session_dependencies (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    depends_on TEXT NOT NULL REFERENCES sessions (id),
    PRIMARY KEY (session_id, depends_on),
    CHECK (session_id <> depends_on)
){{strict}};
CREATE INDEX session_dependencies_by_target ON session_dependencies (depends_on);

CREATE TABLE kernels (
    id                TEXT     PRIMARY KEY CHECK (id <> ''),
    session_id        TEXT     NOT NULL REFERENCES sessions (id),
    cluster_role      TEXT     NOT NULL,
    cluster_idx       INTEGER  NOT NULL CHECK (cluster_idx >= 0),
    image             TEXT     NOT NULL,
    architecture      TEXT     NOT NULL,
    requested         {{json}} NOT NULL,
    agent_id          TEXT     REFERENCES agents (id),
    status            TEXT     NOT NULL CHECK (status IN ('PENDING', 'SCHEDULED', 'PREPARING', 'PULLING',
                          'PREPARED', 'CREATING', 'RUNNING', 'TERMINATING', 'TERMINATED', 'CANCELLED', 'ERROR')),
    status_reason     TEXT     NOT NULL,
    status_changed_at {{time}} NOT NULL,
    container_id      TEXT     NOT NULL,
    exit_code         INTEGER,
    UNIQUE (session_id, cluster_idx),
    -- A kernel holding resources is on an agent; a pending one is on none.
    CHECK (CASE status
        WHEN 'PENDING' THEN agent_id IS NULL
        WHEN 'TERMINATED' THEN {{sqlTrue}} WHEN 'CANCELLED' THEN {{sqlTrue}} WHEN 'ERROR' THEN {{sqlTrue}}
        ELSE agent_id IS NOT NULL END)
){{strict}};
CREATE INDEX kernels_by_agent ON kernels (agent_id, status) WHERE agent_id IS NOT NULL;
CREATE INDEX kernels_by_status ON kernels (status);

CREATE TABLE users (
    id         TEXT     PRIMARY KEY CHECK (id <> ''),
    name       TEXT     NOT NULL UNIQUE CHECK (name <> ''),
    role       TEXT     NOT NULL CHECK (role IN ('admin', 'user')),
    project    TEXT     NOT NULL,
    domain     TEXT     NOT NULL,
    created_at {{time}} NOT NULL
){{strict}};

-- Only hashes of tokens are kept: a copy of this table grants nothing.
CREATE TABLE tokens (
    hash       {{bytes}} PRIMARY KEY CHECK ({{octets}}(hash) >= 16),
    user_id    TEXT      NOT NULL REFERENCES users (id),
    created_at {{time}}  NOT NULL
){{strict}};

CREATE TABLE policies (
    scope                   TEXT     NOT NULL CHECK (scope IN ('user', 'project', 'domain')),
    name                    TEXT     NOT NULL,
    max_slots               {{json}} NOT NULL,
    max_concurrent_sessions INTEGER  NOT NULL CHECK (max_concurrent_sessions >= 0),
    max_pending_sessions    INTEGER  NOT NULL CHECK (max_pending_sessions >= 0),
    PRIMARY KEY (scope, name)
){{strict}};

CREATE TABLE scheduling_history (
    id          {{serial}},
    session_id  TEXT     NOT NULL REFERENCES sessions (id),
    at          {{time}} NOT NULL,
    handler     TEXT     NOT NULL,
    result      TEXT     NOT NULL CHECK (result IN ('SUCCESS', 'NEED_RETRY', 'EXPIRED', 'GIVE_UP', 'SKIPPED')),
    from_status TEXT     NOT NULL,
    to_status   TEXT     NOT NULL,
    message     TEXT     NOT NULL,
    attempt     INTEGER  NOT NULL CHECK (attempt >= 1)
){{strict}};
CREATE INDEX scheduling_history_by_session ON scheduling_history (session_id, id);

CREATE TABLE session_tries (
    session_id TEXT    NOT NULL REFERENCES sessions (id),
    phase      TEXT    NOT NULL,
    tries      INTEGER NOT NULL CHECK (tries >= 0),
    PRIMARY KEY (session_id, phase)
){{strict}};

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
