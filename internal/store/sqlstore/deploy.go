package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

const (
	countLiveDeploymentsNamed = `SELECT COUNT(*) FROM deployments WHERE owner_user = $1 AND name = $2 AND status <> 'DESTROYED'`
	insertDeployment          = `INSERT INTO deployments (` + codec.DeploymentColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`
	selectDeployments = `SELECT ` + codec.DeploymentColumns + ` FROM deployments
WHERE ({empty $1} OR id {in $1}) AND ($2 = '' OR owner_user = $2) AND ($3 = '' OR name = $3)
  AND ($4 = '' OR substr(id, 1, length($4)) = $4) AND ({empty $5} OR status {in $5})
ORDER BY created_at, id`
	// The backoff and scaled_at are the controller's; a new revision
	// clears the backoff in the same write, since the failed starts it
	// counts were the old spec's (the SET reads the row as it was).
	updateDeployment = `UPDATE deployments SET status = $2, status_changed_at = $3, replicas = $4, spec = $5, health = $6,
revision = $8, prev_spec = $9, max_surge = $10, autoscale = $11,
start_failures = CASE WHEN revision = $8 THEN start_failures ELSE 0 END,
next_start_at = CASE WHEN revision = $8 THEN next_start_at ELSE NULL END
WHERE id = $1 AND status {in $7}`
	moveDeployment    = `UPDATE deployments SET status = $2, status_changed_at = $3 WHERE id = $1 AND status {in $4}`
	countStartFailure = `UPDATE deployments SET start_failures = start_failures + 1 WHERE id = $1 AND revision = $2
RETURNING start_failures`
	setNextStart       = `UPDATE deployments SET next_start_at = $2 WHERE id = $1 RETURNING ` + codec.DeploymentColumns
	resetStartFailures = `UPDATE deployments SET start_failures = 0, next_start_at = NULL WHERE id = $1`
	scaleDeployment    = `UPDATE deployments SET replicas = $2, scaled_at = $3 WHERE id = $1 AND status {in $4} AND autoscale <> ''`
	completeRollout    = `UPDATE deployments SET status = $3, status_changed_at = $4, prev_spec = ''
WHERE id = $1 AND revision = $2 AND status {in $5}`
	rollBackRollout = `UPDATE deployments SET status = $3, status_changed_at = $4, prev_spec = '',
spec = CASE WHEN prev_spec = '' THEN spec ELSE prev_spec END, revision = revision - 1,
start_failures = 0, next_start_at = NULL
WHERE id = $1 AND revision = $2 AND status {in $5}`
	existsDeployment = `SELECT COUNT(*) FROM deployments WHERE id = $1`

	insertRoute = `INSERT INTO deployment_routes (id, deployment_id, session_id, status, status_reason, status_changed_at,
created_at, successes, failures, checked_at, endpoint, revision, served)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	selectRoutes = `SELECT ` + codec.RouteColumns + ` FROM deployment_routes r LEFT JOIN sessions s ON s.id = r.session_id
WHERE ({empty $1} OR r.deployment_id {in $1}) AND ({empty $2} OR r.status {in $2})
ORDER BY r.created_at, r.id`
	updateRoute = `UPDATE deployment_routes SET status = $2, status_reason = $3, status_changed_at = $4, successes = $5,
failures = $6, checked_at = $7, endpoint = $8, served = (served OR $2 = 'HEALTHY')
WHERE id = $1 AND status {in $9}
  AND ($2 <> 'HEALTHY' OR EXISTS (SELECT 1 FROM sessions s WHERE s.id = deployment_routes.session_id AND s.status = 'RUNNING' {share}))`
	existsRoute = `SELECT COUNT(*) FROM deployment_routes WHERE id = $1`

	// The latest entry of each deployment and route of a batch's deployments.
	// The latest entry of each (deployment, route) key: one seek each on
	// deployment_history_by_route, however long the history.
	selectLastDeploymentHistory = `SELECT h.id, ` + codec.DeploymentHistoryColumns + `
FROM {rows $1 u(d text, r text)}
JOIN deployment_history h ON h.id = (SELECT x.id FROM deployment_history x
    WHERE x.deployment_id = u.d AND x.route_id = u.r ORDER BY x.id DESC LIMIT 1)`
	mergeDeploymentHistory = `UPDATE deployment_history SET attempt = u.attempt, at = u.at
FROM {rows $1 u(id bigint, attempt int, at timestamptz)}
WHERE deployment_history.id = u.id`
	// Rows are inserted in the batch's order, so the ids they get keep it.
	insertDeploymentHistory = `INSERT INTO deployment_history (` + codec.DeploymentHistoryColumns + `)
SELECT u.deployment_id, u.route_id, u.at, u.handler, u.result, u.from_status, u.to_status, u.message, u.attempt
FROM {rows $1 u(deployment_id text, route_id text, at timestamptz, handler text, result text, from_status text, to_status text, message text, attempt int)}
ORDER BY u.n`
	selectDeploymentHistory = `SELECT id, ` + codec.DeploymentHistoryColumns + ` FROM deployment_history
WHERE deployment_id = $1 ORDER BY id`
)

// CreateDeployment stores a new deployment, refusing a name a live one of
// the owner has. The count and the insert are serialised per name where
// the engine locks keys, as session names are.
func (s *Store) CreateDeployment(ctx context.Context, d domain.Deployment) error {
	text, err := codec.DeploymentJSON(d)
	if err != nil {
		return fmt.Errorf("create deployment: %w: %v", store.ErrInvalid, err)
	}
	return s.write(ctx, "create deployment "+string(d.ID), func(tx txn) error {
		err := s.checkNameFree(ctx, tx, "deployment", countLiveDeploymentsNamed, d.Owner.User, d.Name,
			store.ErrDeploymentNameTaken)
		if err != nil {
			return err
		}
		_, err = tx.exec(ctx, insertDeployment, string(d.ID), d.Name, d.Owner.User, d.Owner.Project, d.Owner.Domain,
			codec.StatusName(d.Status), ts(d.StatusChangedAt), ts(d.CreatedAt), d.Replicas, text.Spec, text.Health,
			d.StartFailures, ts(d.NextStartAt), d.Revision, text.Prev, d.MaxSurge, text.Autoscale, ts(d.ScaledAt))
		return err
	})
}

// GetDeployment returns one deployment.
func (s *Store) GetDeployment(ctx context.Context, id domain.DeploymentID) (domain.Deployment, error) {
	ds, err := s.ListDeployments(ctx, store.DeploymentFilter{IDs: []domain.DeploymentID{id}})
	if err != nil {
		return domain.Deployment{}, err
	}
	if len(ds) == 0 {
		return domain.Deployment{}, fmt.Errorf("deployment %s: %w", id, store.ErrNotFound)
	}
	return ds[0], nil
}

// ListDeployments returns the deployments f selects, oldest first.
func (s *Store) ListDeployments(ctx context.Context, f store.DeploymentFilter) ([]domain.Deployment, error) {
	args := []any{List(codec.Strings(f.IDs)), f.User, f.Name, f.IDPrefix, List(codec.StatusNames(f.Statuses))}
	return readAll(ctx, s, "list deployments", selectDeployments, args, codec.ScanDeployment)
}

// UpdateDeployment writes a user's change over the stored row, guarded
// by its status; the controller's columns are left to the controller.
func (s *Store) UpdateDeployment(ctx context.Context, d domain.Deployment, from []domain.DeploymentStatus) error {
	text, err := codec.DeploymentJSON(d)
	if err != nil {
		return fmt.Errorf("update deployment: %w: %v", store.ErrInvalid, err)
	}
	return s.write(ctx, "update deployment "+string(d.ID), func(tx txn) error {
		n, err := tx.exec(ctx, updateDeployment, string(d.ID), codec.StatusName(d.Status), ts(d.StatusChangedAt),
			d.Replicas, text.Spec, text.Health, List(codec.StatusNames(from)), d.Revision, text.Prev, d.MaxSurge,
			text.Autoscale)
		if err != nil || n == 1 {
			return err
		}
		return guardOrMissing(ctx, tx, existsDeployment, string(d.ID))
	})
}

// MoveDeployment moves a deployment to status to, guarded by its status.
func (s *Store) MoveDeployment(ctx context.Context, id domain.DeploymentID, from []domain.DeploymentStatus,
	to domain.DeploymentStatus, at time.Time) error {
	return s.write(ctx, "move deployment "+string(id), func(tx txn) error {
		n, err := tx.exec(ctx, moveDeployment, string(id), codec.StatusName(to), ts(at), List(codec.StatusNames(from)))
		if err != nil || n == 1 {
			return err
		}
		return guardOrMissing(ctx, tx, existsDeployment, string(id))
	})
}

// CountStartFailure counts one more failed start and sets the next start
// from the count as stored. The increment is made in SQL, under the
// row's write lock, so two counters never both read the same count.
func (s *Store) CountStartFailure(ctx context.Context, id domain.DeploymentID, revision int, now time.Time,
	backoff func(failures int) time.Duration) (domain.Deployment, error) {
	var d domain.Deployment
	err := s.write(ctx, "count failed start of deployment "+string(id), func(tx txn) error {
		// RETURNING reads the count this write made, under its row lock.
		var failures int
		found := false
		if err := tx.query(ctx, countStartFailure, []any{string(id), revision}, func(sc codec.Scanner) error {
			found = true
			return sc.Scan(&failures)
		}); err != nil {
			return err
		}
		if !found {
			return guardOrMissing(ctx, tx, existsDeployment, string(id))
		}
		var err error
		d, err = codec.ScanDeployment(tx.queryRow(ctx, setNextStart, string(id), ts(now.Add(backoff(failures)))))
		return err
	})
	if err != nil {
		return domain.Deployment{}, err
	}
	return d, nil
}

// ResetStartFailures clears the failed-start backoff.
func (s *Store) ResetStartFailures(ctx context.Context, id domain.DeploymentID) error {
	return s.write(ctx, "reset failed starts of deployment "+string(id), func(tx txn) error {
		return tx.execOne(ctx, resetStartFailures, string(id))
	})
}

// ScaleDeployment sets the replicas autoscaling decided on.
func (s *Store) ScaleDeployment(ctx context.Context, id domain.DeploymentID, replicas int, at time.Time,
	from []domain.DeploymentStatus) error {
	return s.write(ctx, "scale deployment "+string(id), func(tx txn) error {
		n, err := tx.exec(ctx, scaleDeployment, string(id), replicas, ts(at), List(codec.StatusNames(from)))
		if err != nil || n == 1 {
			return err
		}
		return guardOrMissing(ctx, tx, existsDeployment, string(id))
	})
}

// EndRollout ends a DEPLOYING deployment's rollout to revision.
func (s *Store) EndRollout(ctx context.Context, id domain.DeploymentID, revision int, to domain.DeploymentStatus,
	at time.Time, rollBack bool) error {
	q := completeRollout
	if rollBack {
		q = rollBackRollout
	}
	deploying := List(codec.StatusNames([]domain.DeploymentStatus{domain.DeploymentDeploying}))
	return s.write(ctx, "end rollout of deployment "+string(id), func(tx txn) error {
		n, err := tx.exec(ctx, q, string(id), revision, codec.StatusName(to), ts(at), deploying)
		if err != nil || n == 1 {
			return err
		}
		return guardOrMissing(ctx, tx, existsDeployment, string(id))
	})
}

// guardOrMissing tells a guarded update that changed nothing apart: the
// row exists (ErrGuardFailed) or does not (ErrNotFound).
func guardOrMissing(ctx context.Context, tx txn, exists, id string) error {
	var n int64
	if err := tx.queryRow(ctx, exists, id).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return store.ErrGuardFailed
}

// CreateRoute stores a new route.
func (s *Store) CreateRoute(ctx context.Context, r domain.Route) error {
	return s.write(ctx, "create route "+string(r.ID), func(tx txn) error {
		_, err := tx.exec(ctx, insertRoute, string(r.ID), string(r.Deployment), string(r.Session),
			codec.StatusName(r.Status), r.StatusReason, ts(r.StatusChangedAt), ts(r.CreatedAt),
			r.Successes, r.Failures, ts(r.CheckedAt), r.Endpoint, r.Revision, r.Served || r.Status == domain.RouteHealthy)
		return err
	})
}

// ListRoutes returns the routes f selects with their sessions' statuses.
func (s *Store) ListRoutes(ctx context.Context, f store.RouteFilter) ([]domain.Route, error) {
	args := []any{List(codec.Strings(f.Deployments)), List(codec.StatusNames(f.Statuses))}
	return readAll(ctx, s, "list routes", selectRoutes, args, codec.ScanRoute)
}

// UpdateRoute writes r over the stored row, guarded by its status. A
// route becomes HEALTHY only while its session is RUNNING, read under a
// shared lock: a session's end waits for the move, whose route the
// trigger of migration 00130 then moves on, or the move, waiting for the
// end, finds the session no longer RUNNING and fails its guard. Either way
// no HEALTHY route outlives its session.
func (s *Store) UpdateRoute(ctx context.Context, r domain.Route, from []domain.RouteStatus) error {
	return s.write(ctx, "update route "+string(r.ID), func(tx txn) error {
		n, err := tx.exec(ctx, updateRoute, string(r.ID), codec.StatusName(r.Status), r.StatusReason,
			ts(r.StatusChangedAt), r.Successes, r.Failures, ts(r.CheckedAt), r.Endpoint, List(codec.StatusNames(from)))
		if err != nil || n == 1 {
			return err
		}
		return guardOrMissing(ctx, tx, existsRoute, string(r.ID))
	})
}

// AppendDeploymentHistory records outcomes, merging a repeat of the latest
// entry of the same deployment and route. The deployments are locked so
// two appenders cannot both start a new entry for one repeat.
func (s *Store) AppendDeploymentHistory(ctx context.Context, entries []domain.DeploymentHistoryEntry) error {
	if len(entries) == 0 {
		return nil
	}
	var deps, keyDeps, keyRoutes []string
	seen := map[[2]string]bool{}
	for _, e := range entries {
		deps = append(deps, string(e.Subject))
		if k := [2]string{string(e.Subject), string(e.Route)}; !seen[k] {
			seen[k] = true
			keyDeps, keyRoutes = append(keyDeps, k[0]), append(keyRoutes, k[1])
		}
	}
	deps = uniqueSorted(deps)
	return s.write(ctx, "append deployment history", func(tx txn) error {
		if err := tx.lock(ctx, lockDeployments, List(deps)); err != nil {
			return err
		}
		type key struct {
			dep   domain.DeploymentID
			route domain.RouteID
		}
		last := map[key]codec.Row[domain.DeploymentHistoryEntry]{}
		if err := tx.query(ctx, selectLastDeploymentHistory, []any{Rows{keyDeps, keyRoutes}}, func(sc codec.Scanner) error {
			id, h, err := codec.ScanDeploymentHistory(sc)
			last[key{h.Subject, h.Route}] = codec.Row[domain.DeploymentHistoryEntry]{RowID: id, Entry: h}
			return err
		}); err != nil {
			return err
		}
		updates, inserts := codec.MergeRepeats(last, entries, func(e domain.DeploymentHistoryEntry) key { return key{e.Subject, e.Route} })
		// One statement for the merges and one for the new entries, as
		// the sessions' history does: health checks append for every route.
		if n := len(updates); n > 0 {
			ids, attempts, times := make([]int64, n), make([]int32, n), make([]time.Time, n)
			for i, u := range updates {
				ids[i], attempts[i], times[i] = u.RowID, int32(u.Entry.Attempt), u.Entry.At.UTC()
			}
			if err := tx.execN(ctx, n, mergeDeploymentHistory, Rows{ids, attempts, times}); err != nil {
				return err
			}
		}
		n := len(inserts)
		if n == 0 {
			return nil
		}
		deps, routes, at, causes := make([]string, n), make([]string, n), make([]time.Time, n), make([]string, n)
		results, from, to, msgs, attempts := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]int32, n)
		for i, e := range inserts {
			deps[i], routes[i], at[i], causes[i] = string(e.Subject), string(e.Route), e.At.UTC(), string(e.Cause)
			results[i], from[i], to[i], msgs[i], attempts[i] = string(e.Result), e.From, e.To, e.Message, int32(e.Attempt)
		}
		return tx.execN(ctx, n, insertDeploymentHistory, Rows{deps, routes, at, causes, results, from, to, msgs, attempts})
	})
}

const lockDeployments = `SELECT id FROM deployments WHERE id {in $1} ORDER BY id {lock}`

// DeploymentHistory returns a deployment's and its routes' entries.
func (s *Store) DeploymentHistory(ctx context.Context, id domain.DeploymentID) ([]domain.DeploymentHistoryEntry, error) {
	return readAll(ctx, s, "history of deployment "+string(id), selectDeploymentHistory, []any{string(id)},
		func(sc codec.Scanner) (domain.DeploymentHistoryEntry, error) {
			_, h, err := codec.ScanDeploymentHistory(sc)
			return h, err
		})
}

const (
	insertDeploymentToken  = `INSERT INTO deployment_tokens (id, deployment_id, token_hash, created_at) VALUES ($1, $2, $3, $4)`
	selectDeploymentTokens = `SELECT id, deployment_id, created_at, revoked_at FROM deployment_tokens
WHERE deployment_id = $1 ORDER BY created_at, id`
	revokeDeploymentToken = `UPDATE deployment_tokens SET revoked_at = $3 WHERE deployment_id = $1 AND id = $2 AND revoked_at IS NULL`
	existsDeploymentToken = `SELECT COUNT(*) FROM deployment_tokens WHERE deployment_id = $1 AND id = $2`
	deploymentByToken     = `SELECT deployment_id FROM deployment_tokens WHERE token_hash = $1 AND revoked_at IS NULL`
)

// CreateDeploymentToken stores a token's hash.
func (s *Store) CreateDeploymentToken(ctx context.Context, t store.DeploymentToken, hash []byte) error {
	return s.write(ctx, "create deployment token", func(tx txn) error {
		_, err := tx.exec(ctx, insertDeploymentToken, t.ID, string(t.Deployment), hash, ts(t.CreatedAt))
		return err
	})
}

// DeploymentTokens lists a deployment's tokens.
func (s *Store) DeploymentTokens(ctx context.Context, id domain.DeploymentID) ([]store.DeploymentToken, error) {
	return readAll(ctx, s, "tokens of deployment "+string(id), selectDeploymentTokens, []any{string(id)},
		codec.ScanDeploymentToken)
}

// RevokeDeploymentToken revokes a token once.
func (s *Store) RevokeDeploymentToken(ctx context.Context, dep domain.DeploymentID, id string, at time.Time) error {
	return s.write(ctx, "revoke deployment token "+id, func(tx txn) error {
		n, err := tx.exec(ctx, revokeDeploymentToken, string(dep), id, at.UTC())
		if err != nil || n == 1 {
			return err
		}
		var found int64
		if err := tx.queryRow(ctx, existsDeploymentToken, string(dep), id).Scan(&found); err != nil {
			return err
		}
		if found == 0 {
			return store.ErrNotFound
		}
		return store.ErrGuardFailed
	})
}

// DeploymentByTokenHash finds the deployment a valid token opens.
func (s *Store) DeploymentByTokenHash(ctx context.Context, hash []byte) (domain.DeploymentID, error) {
	var id string
	err := s.read(ctx, "deployment by token", func(tx txn) error {
		return tx.queryRow(ctx, deploymentByToken, hash).Scan(&id)
	})
	return domain.DeploymentID(id), err
}

const (
	// Only for deployments that exist: a report may race a deployment's
	// creation on another manager, never its removal (nothing is deleted).
	upsertDeploymentLoad = `INSERT INTO deployment_load (deployment_id, manager, inflight, at)
SELECT id, $2, $3, $4 FROM deployments WHERE id = $1
ON CONFLICT (deployment_id, manager) DO UPDATE SET inflight = excluded.inflight, at = excluded.at`
	selectDeploymentLoad = `SELECT deployment_id, SUM(inflight) FROM deployment_load WHERE at >= $1 GROUP BY deployment_id`
)

// ReportDeploymentLoad replaces this manager's load rows.
func (s *Store) ReportDeploymentLoad(ctx context.Context, manager string, load map[domain.DeploymentID]float64, at time.Time) error {
	if len(load) == 0 {
		return nil
	}
	ids := make([]string, 0, len(load))
	for id := range load {
		ids = append(ids, string(id))
	}
	ids = uniqueSorted(ids)
	return s.write(ctx, "report deployment load", func(tx txn) error {
		for _, id := range ids {
			if _, err := tx.exec(ctx, upsertDeploymentLoad, id, manager, load[domain.DeploymentID(id)], at.UTC()); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeploymentLoad sums the managers' reports made at or after since.
func (s *Store) DeploymentLoad(ctx context.Context, since time.Time) (map[domain.DeploymentID]float64, error) {
	out := map[domain.DeploymentID]float64{}
	err := s.read(ctx, "deployment load", func(tx txn) error {
		clear(out)
		return tx.query(ctx, selectDeploymentLoad, []any{since.UTC()}, func(sc codec.Scanner) error {
			var id string
			var v float64
			err := sc.Scan(&id, &v)
			out[domain.DeploymentID(id)] = v
			return err
		})
	})
	return out, err
}
