package codec

import (
	"encoding/json"
	"strconv"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// DeploymentColumns are the deployments columns every read selects, in
// ScanDeployment's order.
const DeploymentColumns = `id, name, owner_user, owner_project, owner_domain, status, status_changed_at, created_at,
replicas, spec, health, start_failures, next_start_at, revision, prev_spec, max_surge, autoscale, scaled_at`

// DeploymentText is a deployment's JSON columns.
type DeploymentText struct {
	Spec, Health string
	// Prev and Autoscale are empty when there is none.
	Prev, Autoscale string
}

// DeploymentJSON encodes a deployment's JSON columns.
func DeploymentJSON(d domain.Deployment) (DeploymentText, error) {
	var out DeploymentText
	enc := func(v any, dst *string) error {
		raw, err := json.Marshal(v)
		*dst = string(raw)
		return err
	}
	if err := enc(d.Spec, &out.Spec); err != nil {
		return out, err
	}
	if err := enc(d.Health, &out.Health); err != nil {
		return out, err
	}
	if d.PrevSpec != nil {
		if err := enc(d.PrevSpec, &out.Prev); err != nil {
			return out, err
		}
	}
	if d.Autoscale != nil {
		if err := enc(d.Autoscale, &out.Autoscale); err != nil {
			return out, err
		}
	}
	return out, nil
}

// ScanDeployment reads DeploymentColumns.
func ScanDeployment(sc Scanner) (domain.Deployment, error) {
	var (
		d                      domain.Deployment
		id, status, spec, hc   string
		prev, auto             string
		changed, created, next rawTime
		scaled                 rawTime
	)
	if err := sc.Scan(&id, &d.Name, &d.Owner.User, &d.Owner.Project, &d.Owner.Domain, &status, &changed, &created,
		&d.Replicas, &spec, &hc, &d.StartFailures, &next, &d.Revision, &prev, &d.MaxSurge, &auto, &scaled); err != nil {
		return d, err
	}
	d.ID = domain.DeploymentID(id)
	e := rowErr{table: "deployments", id: id}
	d.Status = parsed(&e, "status", status, domain.ParseDeploymentStatus)
	d.StatusChangedAt = e.time("status_changed_at", changed)
	d.CreatedAt = e.time("created_at", created)
	d.NextStartAt = e.time("next_start_at", next)
	e.json("spec", spec, &d.Spec)
	e.json("health", hc, &d.Health)
	if prev != "" {
		d.PrevSpec = &domain.DeploymentSpec{}
		e.json("prev_spec", prev, d.PrevSpec)
	}
	if auto != "" {
		d.Autoscale = &domain.Autoscale{}
		e.json("autoscale", auto, d.Autoscale)
	}
	d.ScaledAt = e.time("scaled_at", scaled)
	return d, e.err
}

// RouteColumns are the route columns every read selects, qualified by the
// alias r, followed by the session's status (s, left-joined), in
// ScanRoute's order.
const RouteColumns = `r.id, r.deployment_id, r.session_id, r.status, r.status_reason, r.status_changed_at, r.created_at,
r.successes, r.failures, r.checked_at, r.endpoint, r.revision, r.served, COALESCE(s.status, '')`

// ScanRoute reads RouteColumns.
func ScanRoute(sc Scanner) (domain.Route, error) {
	var (
		r                         domain.Route
		id, dep, sess, status     string
		sessStatus                string
		changed, created, checked rawTime
	)
	if err := sc.Scan(&id, &dep, &sess, &status, &r.StatusReason, &changed, &created,
		&r.Successes, &r.Failures, &checked, &r.Endpoint, &r.Revision, &r.Served, &sessStatus); err != nil {
		return r, err
	}
	r.ID, r.Deployment, r.Session = domain.RouteID(id), domain.DeploymentID(dep), domain.SessionID(sess)
	e := rowErr{table: "deployment_routes", id: id}
	r.Status = parsed(&e, "status", status, domain.ParseRouteStatus)
	r.StatusChangedAt = e.time("status_changed_at", changed)
	r.CreatedAt = e.time("created_at", created)
	r.CheckedAt = e.time("checked_at", checked)
	if sessStatus != "" {
		r.SessionStatus = e.sessionStatus("sessions.status", sessStatus)
	}
	return r, e.err
}

// DeploymentHistoryColumns are the deployment_history columns after its
// row id, in ScanDeploymentHistory's order.
const DeploymentHistoryColumns = `deployment_id, route_id, at, handler, result, from_status, to_status, message, attempt`

// ScanDeploymentHistory reads the row id and DeploymentHistoryColumns.
func ScanDeploymentHistory(sc Scanner) (int64, domain.DeploymentHistoryEntry, error) {
	var (
		rowID               int64
		h                   domain.DeploymentHistoryEntry
		dep, route, handler string
		result              string
		at                  rawTime
	)
	if err := sc.Scan(&rowID, &dep, &route, &at, &handler, &result, &h.From, &h.To, &h.Message, &h.Attempt); err != nil {
		return 0, h, err
	}
	h.Subject, h.Route = domain.DeploymentID(dep), domain.RouteID(route)
	h.Cause, h.Result = domain.HandlerName(handler), domain.RouteResult(result)
	e := rowErr{table: "deployment_history", id: strconv.FormatInt(rowID, 10)}
	h.At = e.time("at", at)
	return rowID, h, e.err
}

// ScanDeploymentToken reads id, deployment_id, created_at, revoked_at.
func ScanDeploymentToken(sc Scanner) (store.DeploymentToken, error) {
	var (
		id, dep          string
		created, revoked rawTime
	)
	if err := sc.Scan(&id, &dep, &created, &revoked); err != nil {
		return store.DeploymentToken{}, err
	}
	e := rowErr{table: "deployment_tokens", id: id}
	t := store.DeploymentToken{ID: id, Deployment: domain.DeploymentID(dep)}
	t.CreatedAt = e.time("created_at", created)
	t.RevokedAt = e.time("revoked_at", revoked)
	return t, e.err
}
