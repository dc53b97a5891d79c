-- A deployment's history is appended for every route at every health
-- check, and each append first reads the latest entry of each (deployment,
-- route) to merge repeats. By (deployment_id, id) alone that read walked
-- every entry of the deployment; by route it is one index seek per key.

-- +goose Up
CREATE INDEX deployment_history_by_route ON deployment_history (deployment_id, route_id, id);

-- +goose Down
DROP INDEX deployment_history_by_route;
