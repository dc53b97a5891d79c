-- The fair-share read keeps, per store instance, the decayed sum of the
-- hours of usage_hourly that no rollup can change any more: those before
-- the hour of usage_watermark.rolled_at, since a pass credits open holds
-- only from the previous pass's end. Two writes can still reach such an
-- hour: a pass crediting a hold whose start was stamped before the
-- previous pass's end (a change committed late, or another manager's
-- clock behind) and PruneUsage deleting the oldest hours. Each bumps
-- final_gen in its transaction, and a cache built at another generation
-- is read again whole.

-- +goose Up
ALTER TABLE usage_watermark ADD COLUMN final_gen {{bigint}} NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE usage_watermark DROP COLUMN final_gen;
