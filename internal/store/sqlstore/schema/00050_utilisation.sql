-- Utilisation over time: every sample interval the leading manager records,
-- per resource group and slot, the summed capacity and occupancy of the
-- group's ALIVE agents (store.RecordUtilisation). Quantities are base-unit
-- integers as in the agents' slot JSON, so averages over a range are exact
-- sums divided once. Samples are pruned by age (PruneUtilisation).
--
-- No reference to resource_groups: history may outlive a group's
-- configuration, and the sampler never writes a group that does not exist.
-- The primary key serves range reads of one group by time; the index on at
-- serves pruning, which deletes by age across groups.

-- +goose Up
CREATE TABLE utilisation_samples (
    resource_group TEXT       NOT NULL,
    at             {{time}}   NOT NULL,
    slot           TEXT       NOT NULL,
    capacity       {{bigint}} NOT NULL,
    occupied       {{bigint}} NOT NULL,
    PRIMARY KEY (resource_group, at, slot)
){{strict "WITHOUT ROWID"}};
CREATE INDEX utilisation_samples_by_time ON utilisation_samples (at);

-- +goose Down
DROP TABLE utilisation_samples;
