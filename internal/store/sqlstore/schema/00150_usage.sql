-- Fair share over time (issue 30).
--
-- usage_hourly is the accounting history: per hour (the hour's start), per
-- resource group, owner (user, project, domain) and slot, the slot-seconds
-- held, in the slot's base units (cpu thousandths, bytes, devices) times
-- seconds. A float: a day of a large memory holding passes 2^63 byte-
-- seconds, and sums of it need no more than double's 15 digits.
--
-- RollupUsage fills it from the change feed off the scheduling path: it
-- reads the kernel changes after usage_watermark.pos, opens a hold in
-- usage_open when a kernel starts holding slots and closes it when it stops,
-- credits every hold up to now, and advances the watermark, all in one
-- transaction, so a crash neither loses nor counts twice. rolled_at is the
-- time the last pass credited open holds up to (NULL before the first pass,
-- which starts from the kernels holding then and the feed's head).
--
-- A group's fair-share settings: the half-life of usage (0: the default,
-- seven days) and shares by "user:NAME" / "project:NAME" (a JSON object;
-- a name missing has 1). No reference to resource_groups from the
-- history: it outlives a group's configuration.

-- +goose Up
ALTER TABLE resource_groups ADD COLUMN fairshare_half_life_ns {{bigint}} NOT NULL DEFAULT 0 CHECK (fairshare_half_life_ns >= 0);
ALTER TABLE resource_groups ADD COLUMN fair_shares {{json}} NOT NULL DEFAULT '{}';
CREATE TABLE usage_hourly (
    resource_group TEXT     NOT NULL,
    hour           {{time}} NOT NULL,
    owner_user     TEXT     NOT NULL,
    owner_project  TEXT     NOT NULL,
    owner_domain   TEXT     NOT NULL,
    slot           TEXT     NOT NULL,
    amount         {{real}} NOT NULL,
    PRIMARY KEY (resource_group, hour, owner_user, owner_project, owner_domain, slot)
){{strict "WITHOUT ROWID"}};
CREATE INDEX usage_hourly_by_hour ON usage_hourly (hour);
CREATE TABLE usage_open (
    kernel_id      TEXT     PRIMARY KEY,
    resource_group TEXT     NOT NULL,
    owner_user     TEXT     NOT NULL,
    owner_project  TEXT     NOT NULL,
    owner_domain   TEXT     NOT NULL,
    requested      {{json}} NOT NULL,
    since          {{time}} NOT NULL
){{strict}};
CREATE TABLE usage_watermark (
    id        INTEGER  PRIMARY KEY CHECK (id = 1),
    pos       {{bigint}} NOT NULL,
    rolled_at {{time}}
){{strict}};
INSERT INTO usage_watermark (id, pos, rolled_at) VALUES (1, 0, NULL);

-- +goose Down
DROP TABLE usage_watermark;
DROP TABLE usage_open;
DROP TABLE usage_hourly;
ALTER TABLE resource_groups DROP COLUMN fair_shares;
ALTER TABLE resource_groups DROP COLUMN fairshare_half_life_ns;
