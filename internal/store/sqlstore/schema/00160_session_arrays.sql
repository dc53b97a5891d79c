-- Session arrays (SLURM's job arrays): one row per array, and each
-- element an ordinary session that names its array in sessions.array_id
-- with its index in sessions.array_index, both fixed at creation. The
-- array keeps only what its elements cannot say: its name, the spec as
-- submitted and the cap on how many elements run at once (0: none). Its
-- status and outcome are counted from the elements when read, so no
-- element's change has a second row to keep in step. Times are Unix
-- nanoseconds.

-- +goose Up
CREATE TABLE session_arrays (
    id            TEXT       PRIMARY KEY CHECK (id <> ''),
    name          TEXT       NOT NULL CHECK (name <> ''),
    owner_user    TEXT       NOT NULL,
    owner_project TEXT       NOT NULL,
    owner_domain  TEXT       NOT NULL,
    spec          TEXT       NOT NULL,
    count         {{bigint}} NOT NULL CHECK (count >= 1),
    max_running   {{bigint}} NOT NULL CHECK (max_running >= 0),
    created_ns    {{bigint}} NOT NULL
){{strict}};
CREATE INDEX session_arrays_by_owner ON session_arrays (owner_user, name, created_ns);

ALTER TABLE sessions ADD COLUMN array_id TEXT REFERENCES session_arrays (id);
ALTER TABLE sessions ADD COLUMN array_index {{bigint}} NOT NULL DEFAULT 0;
CREATE INDEX sessions_by_array ON sessions (array_id, status);

-- +goose Down
DROP INDEX sessions_by_array;
ALTER TABLE sessions DROP COLUMN array_index;
ALTER TABLE sessions DROP COLUMN array_id;
DROP TABLE session_arrays;
