-- Accelerators as devices (issue 19). agents.devices is what the agent
-- reported at registration: a JSON list of {id, index, slot, model,
-- memory}. kernels.devices is what placement granted the kernel on its
-- agent: a JSON list of {device, index, slot, share, memory}, written in
-- the same statement that schedules the kernel and cleared when it goes
-- back to PENDING. What a device has free is never stored: it is derived
-- from the grants of the kernels that hold resources, so a kernel that
-- stops holding frees its devices exactly once, with its status change.
-- SQL never looks inside either list; '[]' is "none".

-- +goose Up
ALTER TABLE agents ADD COLUMN devices TEXT NOT NULL DEFAULT '[]';
ALTER TABLE kernels ADD COLUMN devices TEXT NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE kernels DROP COLUMN devices;
ALTER TABLE agents DROP COLUMN devices;
