-- Agent drains with a deadline (Nomad's `node drain -deadline`). A row
-- exists while the agent is being drained: it is unschedulable, and once
-- deadline_ns has passed the coordinator terminates what still runs there.
-- Times are Unix nanoseconds; deadline_ns 0 means no deadline (sessions
-- end on their own). Uncordoning deletes the row.

-- +goose Up
CREATE TABLE agent_drains (
    agent_id    TEXT       PRIMARY KEY REFERENCES agents (id),
    started_ns  {{bigint}} NOT NULL,
    deadline_ns {{bigint}} NOT NULL DEFAULT 0
){{strict}};

-- +goose Down
DROP TABLE agent_drains;
