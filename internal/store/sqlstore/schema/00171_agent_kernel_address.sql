-- The address an agent's kernels bind and reach each other at (agent
-- --kernel-address), which may differ from the address the manager calls
-- it at: a multi-node session's kernels are told their peers' kernel
-- addresses. Empty for agents of earlier releases, whose host is used.

-- +goose Up
ALTER TABLE agents ADD COLUMN kernel_address TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE agents DROP COLUMN kernel_address;
