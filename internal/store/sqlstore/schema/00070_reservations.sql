-- Reservations with backfill (head-of-line mode reserve). The existing
-- head_of_line column's CHECK allows only skip and block, and SQLite
-- cannot widen a CHECK without rebuilding resource_groups, which agents
-- and sessions reference. So the mode is stored as head_of_line = 'skip'
-- with reserve = 1: a reader that predates this column sees skip, the
-- nearest older behaviour. reservation_depth is how many waiting
-- sessions hold reservations at once. Existing groups keep their mode;
-- new groups get reserve from the application.

-- +goose Up
ALTER TABLE resource_groups ADD COLUMN reserve INTEGER NOT NULL DEFAULT 0 CHECK (reserve IN (0, 1));
ALTER TABLE resource_groups ADD COLUMN reservation_depth INTEGER NOT NULL DEFAULT 4 CHECK (reservation_depth >= 0);

-- +goose Down
ALTER TABLE resource_groups DROP COLUMN reservation_depth;
ALTER TABLE resource_groups DROP COLUMN reserve;
