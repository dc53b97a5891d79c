package store

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Deployments stores model-serving deployments, their routes and their
// history (seed 001). Each method is one transaction.
type Deployments interface {
	// CreateDeployment stores a new deployment. A name that a deployment
	// of the same owner not yet DESTROYED has is refused with
	// ErrDeploymentNameTaken.
	CreateDeployment(ctx context.Context, d domain.Deployment) error
	GetDeployment(ctx context.Context, id domain.DeploymentID) (domain.Deployment, error)
	// ListDeployments returns deployments oldest first.
	ListDeployments(ctx context.Context, f DeploymentFilter) ([]domain.Deployment, error)
	// UpdateDeployment writes a user's change: d's status, status change
	// time, replicas, spec, health check, revision, previous spec, surge
	// and autoscaling over the stored row, if its status is still one of
	// from (ErrGuardFailed otherwise). The failed-start backoff and the
	// time autoscaling last scaled are the controller's and are left as
	// stored, except that a change of revision clears the backoff: the
	// failed starts it counts were the old spec's. Name, owner and
	// creation time never change.
	UpdateDeployment(ctx context.Context, d domain.Deployment, from []domain.DeploymentStatus) error

	DeploymentControl

	// CreateRoute stores a new route of an existing deployment. Its
	// session need not exist yet: it is created after the route, so that
	// no session is ever left without its route.
	CreateRoute(ctx context.Context, r domain.Route) error
	// ListRoutes returns routes oldest first, each with its session's
	// status read in the same query (0 when the session does not exist).
	ListRoutes(ctx context.Context, f RouteFilter) ([]domain.Route, error)
	// UpdateRoute writes r's status, reason, status change time, check
	// counters and endpoint over the stored row, if its status is still
	// one of from (ErrGuardFailed otherwise); a route made HEALTHY is
	// marked Served for good, whatever r says. Making a route HEALTHY
	// also needs its session RUNNING (ErrGuardFailed otherwise); and a
	// session that leaves RUNNING moves its HEALTHY, DEGRADED and
	// UNHEALTHY routes that served to TERMINATING, with a RunningRoute
	// FAILURE history entry, in the transaction that moves it, so no
	// HEALTHY route ever outlives its session. A route that never served
	// is left to the controller, which counts its end as a failed start.
	UpdateRoute(ctx context.Context, r domain.Route, from []domain.RouteStatus) error
	// AppendDeploymentHistory records outcomes in order. One identical
	// (handler, result, from, to, message) to the latest entry of the same
	// deployment and route merges into it: attempt+1, time moved on.
	AppendDeploymentHistory(ctx context.Context, entries []domain.DeploymentHistoryEntry) error
	// DeploymentHistory returns the entries of a deployment and its
	// routes, oldest first.
	DeploymentHistory(ctx context.Context, id domain.DeploymentID) ([]domain.DeploymentHistoryEntry, error)

	// CreateDeploymentToken stores a token of an existing deployment by
	// its hash; the token itself is never stored.
	CreateDeploymentToken(ctx context.Context, t DeploymentToken, hash []byte) error
	// DeploymentTokens lists a deployment's tokens, revoked ones too,
	// oldest first.
	DeploymentTokens(ctx context.Context, id domain.DeploymentID) ([]DeploymentToken, error)
	// RevokeDeploymentToken revokes one of the deployment's tokens at at:
	// ErrNotFound when the deployment has no such token, ErrGuardFailed
	// when it is revoked already.
	RevokeDeploymentToken(ctx context.Context, dep domain.DeploymentID, id string, at time.Time) error
	// DeploymentByTokenHash returns the deployment a token not revoked
	// opens; ErrNotFound otherwise.
	DeploymentByTokenHash(ctx context.Context, hash []byte) (domain.DeploymentID, error)

	// ReportDeploymentLoad replaces manager's measured load (average
	// requests in flight) of each deployment in load that exists.
	ReportDeploymentLoad(ctx context.Context, manager string, load map[domain.DeploymentID]float64, at time.Time) error
	// DeploymentLoad sums, per deployment, the reports made at or after
	// since: the load all managers' proxies carry.
	DeploymentLoad(ctx context.Context, since time.Time) (map[domain.DeploymentID]float64, error)
}

// DeploymentControl is the deployment controller's writes. Each touches
// only the columns it names, so a user's update between the controller's
// read and its write is kept; each returns ErrNotFound for an unknown
// deployment, and is one transaction.
type DeploymentControl interface {
	// MoveDeployment sets status to and the status change time at, if the
	// status is still one of from (ErrGuardFailed otherwise).
	MoveDeployment(ctx context.Context, id domain.DeploymentID, from []domain.DeploymentStatus,
		to domain.DeploymentStatus, at time.Time) error
	// CountStartFailure counts one more failed start of revision and sets
	// the next start to now+backoff(the new count), returning the row as
	// stored. ErrGuardFailed when the deployment has another revision by
	// now: that spec's failed starts are its own.
	CountStartFailure(ctx context.Context, id domain.DeploymentID, revision int, now time.Time,
		backoff func(failures int) time.Duration) (domain.Deployment, error)
	// ResetStartFailures clears the failed-start count and the next start.
	ResetStartFailures(ctx context.Context, id domain.DeploymentID) error
	// ScaleDeployment sets replicas and the time autoscaling scaled, if
	// the status is still one of from and the deployment still autoscales
	// (ErrGuardFailed otherwise: a user who just turned autoscaling off
	// keeps the replicas they have).
	ScaleDeployment(ctx context.Context, id domain.DeploymentID, replicas int, at time.Time,
		from []domain.DeploymentStatus) error
	// EndRollout ends a DEPLOYING deployment's rollout to revision
	// (ErrGuardFailed when it is not DEPLOYING at that revision): it moves
	// to to and forgets the previous spec; rolling back also restores
	// that spec as revision-1 and clears the failed-start backoff, which
	// counted the new spec's failures. Replicas, surge and autoscaling,
	// which a user may change during a rollout, are left alone.
	EndRollout(ctx context.Context, id domain.DeploymentID, revision int, to domain.DeploymentStatus,
		at time.Time, rollBack bool) error
}

// DeploymentToken is a credential that opens one deployment's proxy.
type DeploymentToken struct {
	ID         string
	Deployment domain.DeploymentID
	CreatedAt  time.Time
	// RevokedAt is zero while the token is valid.
	RevokedAt time.Time
}

// ErrDeploymentNameTaken: a deployment of the owner, not yet destroyed,
// already has the name.
var ErrDeploymentNameTaken = fmt.Errorf("%w: a live deployment of the owner has that name", ErrConflict)

// DeploymentFilter selects deployments; zero fields select everything.
type DeploymentFilter struct {
	IDs      []domain.DeploymentID
	User     string
	Name     string
	IDPrefix string
	Statuses []domain.DeploymentStatus
}

// RouteFilter selects routes; zero fields select everything.
type RouteFilter struct {
	Deployments []domain.DeploymentID
	Statuses    []domain.RouteStatus
}
