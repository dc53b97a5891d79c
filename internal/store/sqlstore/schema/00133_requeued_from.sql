-- A requeued attempt of a preempted session gets an id of its own, which
-- shares no prefix with the attempt it came from (an id prefix names one
-- session); requeued_from is the link, kept for as long as the session.
-- Attempts requeued before this migration were named "<id>.r" and keep
-- that name and no link.

-- +goose Up
ALTER TABLE sessions ADD COLUMN requeued_from TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE sessions DROP COLUMN requeued_from;
