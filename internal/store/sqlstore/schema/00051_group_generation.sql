-- A resource group's generation: a counter bumped in the same transaction
-- as every change to the group's scheduling input that the change feed
-- does not carry (an agent registered, lost, cordoned; the group's
-- configuration; a policy). With the feed position it tells a manager
-- whether a scheduling round that placed nothing could place anything
-- now, whichever manager made the change.

-- +goose Up
ALTER TABLE resource_groups ADD COLUMN generation {{bigint}} NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE resource_groups DROP COLUMN generation;
