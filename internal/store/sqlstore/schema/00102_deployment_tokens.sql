-- Per-deployment tokens: a client holding one may call the deployment's
-- proxy and nothing else. Only the token's hash is stored; a revoked
-- token keeps its row (revoked_at set) so listings show what was revoked.

-- +goose Up
CREATE TABLE deployment_tokens (
    id            TEXT      PRIMARY KEY CHECK (id <> ''),
    deployment_id TEXT      NOT NULL REFERENCES deployments (id),
    token_hash    {{bytes}} NOT NULL UNIQUE,
    created_at    {{time}}  NOT NULL,
    revoked_at    {{time}}
){{strict}};
CREATE INDEX deployment_tokens_by_deployment ON deployment_tokens (deployment_id, created_at);

-- +goose Down
DROP TABLE deployment_tokens;
