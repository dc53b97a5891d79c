-- A resource group's default and minimum slots for kernel requests
-- (domain.ResourceGroup.DefaultSlots and MinSlots), encoded like a
-- kernel's requested slots: a JSON object keyed by slot name with
-- base-unit integer strings (see internal/store/internal/codec). They are
-- configuration that SQL never sums, so TEXT is enough in both engines.
-- '{}' is "none", which the store reads back as nil.

-- +goose Up
ALTER TABLE resource_groups ADD COLUMN default_slots TEXT NOT NULL DEFAULT '{}';
ALTER TABLE resource_groups ADD COLUMN min_slots TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE resource_groups DROP COLUMN min_slots;
ALTER TABLE resource_groups DROP COLUMN default_slots;
