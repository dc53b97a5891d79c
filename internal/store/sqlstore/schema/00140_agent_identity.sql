-- Agents' identities: the cluster CA every manager signs with (one row,
-- the first manager's), the bootstrap tokens agents join with (only their
-- hash is stored; uses_left NULL is unlimited within the expiry), and the
-- certificates issued to agents, so that `agent rm` can revoke them and a
-- second joiner cannot take an id whose certificate is live.

-- +goose Up
CREATE TABLE cluster_ca (
    id         INTEGER  PRIMARY KEY CHECK (id = 1),
    cert_pem   TEXT     NOT NULL,
    key_pem    TEXT     NOT NULL,
    created_at {{time}} NOT NULL
){{strict}};

CREATE TABLE join_tokens (
    id         TEXT      PRIMARY KEY CHECK (id <> ''),
    token_hash {{bytes}} NOT NULL UNIQUE,
    created_at {{time}}  NOT NULL,
    expires_at {{time}}  NOT NULL,
    uses_left  INTEGER   CHECK (uses_left >= 0)
){{strict}};

CREATE TABLE agent_certificates (
    serial     TEXT     PRIMARY KEY CHECK (serial <> ''),
    agent_id   TEXT     NOT NULL CHECK (agent_id <> ''),
    not_after  {{time}} NOT NULL,
    revoked_at {{time}}
){{strict}};
CREATE INDEX agent_certificates_by_agent ON agent_certificates (agent_id, not_after);

-- +goose Down
DROP TABLE agent_certificates;
DROP TABLE join_tokens;
DROP TABLE cluster_ca;
