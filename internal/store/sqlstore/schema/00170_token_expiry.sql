-- A user's token may expire (`sokovan user token --ttl`): expires_at NULL
-- is a token that never does, as every token made before this one.

-- +goose Up
ALTER TABLE tokens ADD COLUMN expires_at {{time}};

-- +goose Down
ALTER TABLE tokens DROP COLUMN expires_at;
