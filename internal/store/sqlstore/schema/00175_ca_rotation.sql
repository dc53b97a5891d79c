-- Rotating the cluster CA without downtime (`sokovan ca rotate`): while a
-- rotation runs, the CA being replaced stays beside the new one
-- (previous_*), trusted and still the managers' own, until `--finish`
-- drops it. Each agent certificate records the fingerprint of the CA that
-- issued it (issuer), so that finishing can name the agents still holding
-- one of the old CA; NULL is a certificate issued before this migration,
-- by the only CA there was, which a rotation fills in.

-- +goose Up
ALTER TABLE cluster_ca ADD COLUMN previous_cert_pem TEXT;
ALTER TABLE cluster_ca ADD COLUMN previous_key_pem TEXT;
ALTER TABLE agent_certificates ADD COLUMN issuer TEXT;

-- +goose Down
ALTER TABLE agent_certificates DROP COLUMN issuer;
ALTER TABLE cluster_ca DROP COLUMN previous_key_pem;
ALTER TABLE cluster_ca DROP COLUMN previous_cert_pem;
