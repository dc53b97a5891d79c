package domain

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// DeploymentID names a model-serving deployment (Backend.AI's endpoint).
type DeploymentID string

// RouteID names one replica of a deployment. A route is served by exactly
// one inference session; a replaced replica is a new route.
type RouteID string

// DeploymentStatus is where a deployment is in its lifecycle (seed 001's
// EndpointLifecycle).
type DeploymentStatus uint8

// Deployment statuses. CREATED is seed 001's deprecated alias of PENDING:
// it is read and handled like PENDING and never written by this code.
const (
	DeploymentPending DeploymentStatus = iota + 1
	DeploymentCreated
	DeploymentScaling
	DeploymentReady
	DeploymentDeploying
	DeploymentDestroying
	DeploymentDestroyed
)

var deploymentStatusNames = [...]string{
	DeploymentPending:    "PENDING",
	DeploymentCreated:    "CREATED",
	DeploymentScaling:    "SCALING",
	DeploymentReady:      "READY",
	DeploymentDeploying:  "DEPLOYING",
	DeploymentDestroying: "DESTROYING",
	DeploymentDestroyed:  "DESTROYED",
}

// DeploymentStatuses lists every deployment status in lifecycle order.
func DeploymentStatuses() []DeploymentStatus {
	out := make([]DeploymentStatus, 0, len(deploymentStatusNames)-1)
	for s := DeploymentPending; s <= DeploymentDestroyed; s++ {
		out = append(out, s)
	}
	return out
}

func (s DeploymentStatus) String() string {
	if int(s) < len(deploymentStatusNames) && s != 0 {
		return deploymentStatusNames[s]
	}
	return fmt.Sprintf("DeploymentStatus(%d)", uint8(s))
}

// ParseDeploymentStatus reads a status name as String writes it.
func ParseDeploymentStatus(name string) (DeploymentStatus, error) {
	for i, n := range deploymentStatusNames {
		if n == name && i != 0 {
			return DeploymentStatus(i), nil
		}
	}
	return 0, fmt.Errorf("unknown deployment status %q", name)
}

// Terminal reports whether nothing more will happen to the deployment.
func (s DeploymentStatus) Terminal() bool { return s == DeploymentDestroyed }

// RouteStatus is where one replica is (seed 001's RouteStatus).
type RouteStatus uint8

// Route statuses.
const (
	RouteProvisioning RouteStatus = iota + 1
	RouteHealthy
	RouteUnhealthy
	RouteDegraded
	RouteTerminating
	RouteTerminated
	RouteFailedToStart
)

var routeStatusNames = [...]string{
	RouteProvisioning:  "PROVISIONING",
	RouteHealthy:       "HEALTHY",
	RouteUnhealthy:     "UNHEALTHY",
	RouteDegraded:      "DEGRADED",
	RouteTerminating:   "TERMINATING",
	RouteTerminated:    "TERMINATED",
	RouteFailedToStart: "FAILED_TO_START",
}

// RouteStatuses lists every route status in seed 001's order.
func RouteStatuses() []RouteStatus {
	out := make([]RouteStatus, 0, len(routeStatusNames)-1)
	for s := RouteProvisioning; s <= RouteFailedToStart; s++ {
		out = append(out, s)
	}
	return out
}

func (s RouteStatus) String() string {
	if int(s) < len(routeStatusNames) && s != 0 {
		return routeStatusNames[s]
	}
	return fmt.Sprintf("RouteStatus(%d)", uint8(s))
}

// ParseRouteStatus reads a status name as String writes it.
func ParseRouteStatus(name string) (RouteStatus, error) {
	for i, n := range routeStatusNames {
		if n == name && i != 0 {
			return RouteStatus(i), nil
		}
	}
	return 0, fmt.Errorf("unknown route status %q", name)
}

// Terminal reports whether the route is done. FAILED_TO_START is not: its
// session may still hold resources until RunningRoute sends it on to
// TERMINATING.
func (s RouteStatus) Terminal() bool { return s == RouteTerminated }

// Live reports whether the route counts toward the deployment's replicas:
// it is, or may still become, a serving replica.
func (s RouteStatus) Live() bool {
	return s == RouteProvisioning || s == RouteHealthy || s == RouteDegraded || s == RouteUnhealthy
}

// RouteResult is a route or deployment handler's outcome. Seed 001 gives
// deployments SUCCESS and FAILURE only and routes STALE besides: neither
// has retries or expiry, the coordinator's session results do not apply.
type RouteResult string

// Route and deployment handler results.
const (
	RouteSuccess RouteResult = "SUCCESS"
	RouteFailure RouteResult = "FAILURE"
	RouteStale   RouteResult = "STALE"
)

// Deployment and route handler names, as their history records them.
const (
	HandlerCheckPendingDeployment HandlerName = "CheckPendingDeployment"
	HandlerScalingDeployment      HandlerName = "ScalingDeployment"
	HandlerCheckReplicaDeployment HandlerName = "CheckReplicaDeployment"
	HandlerReconcileDeployment    HandlerName = "ReconcileDeployment"
	HandlerDestroyingDeployment   HandlerName = "DestroyingDeployment"
	HandlerRolloutDeployment      HandlerName = "RolloutDeployment"
	// HandlerAutoscaleDeployment changes replicas only; the handlers
	// above then move the deployment.
	HandlerAutoscaleDeployment HandlerName = "AutoscaleDeployment"

	HandlerProvisioningRoute    HandlerName = "ProvisioningRoute"
	HandlerHealthCheckRoute     HandlerName = "HealthCheckRoute"
	HandlerRunningRoute         HandlerName = "RunningRoute"
	HandlerRouteEviction        HandlerName = "RouteEviction"
	HandlerTerminatingRoute     HandlerName = "TerminatingRoute"
	HandlerServiceDiscoverySync HandlerName = "ServiceDiscoverySync"

	// Moves made at a user's request, outside the tables.
	HandlerUserDestroy HandlerName = "UserDestroy"
	HandlerUserUpdate  HandlerName = "UserUpdate"
)

// DeploymentHandler is one row of seed 001's deployment table. A zero
// target means the outcome keeps the status (only history records it).
type DeploymentHandler struct {
	Name    HandlerName
	Target  []DeploymentStatus
	Success DeploymentStatus
	Failure DeploymentStatus
}

// For returns where result r moves a deployment, 0 to keep it.
func (h DeploymentHandler) For(r RouteResult) DeploymentStatus {
	switch r {
	case RouteSuccess:
		return h.Success
	case RouteFailure:
		return h.Failure
	}
	return 0
}

// DeploymentHandlers is seed 001's deployment table, in its order, and
// one row of ours after it: seed 001 names DEPLOYING but gives it no
// handler, so RolloutDeployment drives a rolling update, READY when every
// replica runs the new revision, SCALING (with the old revision restored)
// when the new one fails.
func DeploymentHandlers() []DeploymentHandler {
	return []DeploymentHandler{
		{Name: HandlerCheckPendingDeployment, Target: []DeploymentStatus{DeploymentPending, DeploymentCreated}, Success: DeploymentScaling},
		{Name: HandlerScalingDeployment, Target: []DeploymentStatus{DeploymentScaling}, Success: DeploymentReady},
		{Name: HandlerCheckReplicaDeployment, Target: []DeploymentStatus{DeploymentReady}, Success: DeploymentScaling},
		{Name: HandlerReconcileDeployment, Target: []DeploymentStatus{DeploymentReady}, Failure: DeploymentScaling},
		{Name: HandlerDestroyingDeployment, Target: []DeploymentStatus{DeploymentDestroying}, Success: DeploymentDestroyed, Failure: DeploymentDestroyed},
		{Name: HandlerRolloutDeployment, Target: []DeploymentStatus{DeploymentDeploying}, Success: DeploymentReady, Failure: DeploymentScaling},
	}
}

// DeploymentHandlerByName returns the row of the deployment table named n.
func DeploymentHandlerByName(n HandlerName) (DeploymentHandler, bool) {
	for _, h := range DeploymentHandlers() {
		if h.Name == n {
			return h, true
		}
	}
	return DeploymentHandler{}, false
}

// RouteHandler is one row of seed 001's route table. A zero target means
// the outcome keeps the status.
type RouteHandler struct {
	Name    HandlerName
	Target  []RouteStatus
	Success RouteStatus
	Failure RouteStatus
	Stale   RouteStatus
}

// For returns where result r moves a route, 0 to keep it.
func (h RouteHandler) For(r RouteResult) RouteStatus {
	switch r {
	case RouteSuccess:
		return h.Success
	case RouteFailure:
		return h.Failure
	case RouteStale:
		return h.Stale
	}
	return 0
}

// RouteHandlers is seed 001's route table, in its order, with one
// change: a route stays PROVISIONING until its first health result, as a
// Kubernetes pod is not ready before its startup probe passes. The seed
// moves it to DEGRADED once its session runs, which showed every normal
// start as degraded; here ProvisioningRoute's success keeps the route
// where it is (with its endpoint recorded), and HealthCheckRoute takes
// PROVISIONING routes too, to HEALTHY on their first passing checks or
// UNHEALTHY on failures counted past the initial delay.
func RouteHandlers() []RouteHandler {
	return []RouteHandler{
		{Name: HandlerProvisioningRoute, Target: []RouteStatus{RouteProvisioning}, Failure: RouteFailedToStart},
		{Name: HandlerHealthCheckRoute, Target: []RouteStatus{RouteProvisioning, RouteHealthy, RouteUnhealthy, RouteDegraded},
			Success: RouteHealthy, Failure: RouteUnhealthy, Stale: RouteDegraded},
		{Name: HandlerRunningRoute, Target: []RouteStatus{RouteDegraded, RouteHealthy, RouteUnhealthy, RouteFailedToStart}, Failure: RouteTerminating},
		{Name: HandlerRouteEviction, Target: []RouteStatus{RouteUnhealthy}, Success: RouteTerminating},
		{Name: HandlerTerminatingRoute, Target: []RouteStatus{RouteTerminating}, Success: RouteTerminated},
		{Name: HandlerServiceDiscoverySync, Target: []RouteStatus{RouteHealthy}},
	}
}

// RouteHandlerByName returns the row of the route table named n.
func RouteHandlerByName(n HandlerName) (RouteHandler, bool) {
	for _, h := range RouteHandlers() {
		if h.Name == n {
			return h, true
		}
	}
	return RouteHandler{}, false
}

// RouteBound is how long a route may stay in a non-terminal status before
// the controller moves it on, so that no route waits for ever, and the
// outcome that move is recorded as. HEALTHY and DEGRADED are bounded by
// the health check itself (STALE, then consecutive failures); UNHEALTHY by
// the eviction grace.
type RouteBound struct {
	Status  RouteStatus
	Handler HandlerName
	Result  RouteResult
}

// UserMove is a deployment move made at a user's request. Seed 001's
// table has no rows for them, being driven by the controller alone: the
// API makes the move in the write that takes the request, and the
// handlers go on from To.
type UserMove struct {
	Name HandlerName
	// When is the request, as docs/states.md labels the edge.
	When string
	From []DeploymentStatus
	To   DeploymentStatus
}

// UserMoves lists the moves a user's request makes. A replicas change
// alone moves nothing (the handlers see the difference); a spec change
// to a PENDING deployment keeps it PENDING, its first routes run the new
// spec; a spec change is refused while DEPLOYING, as is everything while
// DESTROYING.
func UserMoves() []UserMove {
	return []UserMove{
		{Name: HandlerUserUpdate, When: "spec change", From: []DeploymentStatus{DeploymentScaling, DeploymentReady},
			To: DeploymentDeploying},
		{Name: HandlerUserDestroy, When: "destroy", From: []DeploymentStatus{DeploymentPending, DeploymentCreated,
			DeploymentScaling, DeploymentReady, DeploymentDeploying}, To: DeploymentDestroying},
	}
}

// UserMoveFrom returns where the user's request n takes a deployment in
// status s; false when it makes no move from s.
func UserMoveFrom(n HandlerName, s DeploymentStatus) (DeploymentStatus, bool) {
	for _, m := range UserMoves() {
		if m.Name == n && slices.Contains(m.From, s) {
			return m.To, true
		}
	}
	return 0, false
}

// RouteEnd is a route move a deployment handler makes: a route the
// deployment no longer wants goes TERMINATING whatever the route handlers
// last made of it, its session ended after the drain grace.
type RouteEnd struct {
	Handler HandlerName
	// When is why the deployment ends it, as docs/states.md labels it.
	When string
	From []RouteStatus
}

// RouteEnds lists the deployment handlers' route moves.
func RouteEnds() []RouteEnd {
	live := []RouteStatus{RouteProvisioning, RouteHealthy, RouteUnhealthy, RouteDegraded}
	return []RouteEnd{
		{Handler: HandlerScalingDeployment, When: "scale-in", From: live},
		{Handler: HandlerRolloutDeployment, When: "replaced by the new revision, or the new revision rolled back", From: live},
		{Handler: HandlerDestroyingDeployment, When: "destroy", From: append(slices.Clone(live), RouteFailedToStart)},
	}
}

// RouteEndAllowed reports whether deployment handler h may end a route
// in status s.
func RouteEndAllowed(h HandlerName, s RouteStatus) bool {
	for _, e := range RouteEnds() {
		if e.Handler == h && slices.Contains(e.From, s) {
			return true
		}
	}
	return false
}

// RouteBounds lists the bounded statuses and who ends each.
func RouteBounds() []RouteBound {
	return []RouteBound{
		{Status: RouteProvisioning, Handler: HandlerProvisioningRoute, Result: RouteFailure},
		{Status: RouteUnhealthy, Handler: HandlerRouteEviction, Result: RouteSuccess},
		{Status: RouteFailedToStart, Handler: HandlerRunningRoute, Result: RouteFailure},
		{Status: RouteTerminating, Handler: HandlerTerminatingRoute, Result: RouteSuccess},
	}
}

// HealthCheck is how a deployment's routes are probed: an HTTP GET of Path
// on the route's service port. Port 0 means the route's first service
// port. Thresholds count consecutive results.
type HealthCheck struct {
	Path             string        `json:"path"`
	Port             int           `json:"port"`
	Interval         time.Duration `json:"interval"`
	Timeout          time.Duration `json:"timeout"`
	InitialDelay     time.Duration `json:"initial_delay"`
	SuccessThreshold int           `json:"success_threshold"`
	FailureThreshold int           `json:"failure_threshold"`
}

// DefaultHealthCheck is what a deployment gets for what it leaves out.
// The interval and path follow Backend.AI; the initial delay is shorter
// than its 60 s because it only forgives failures: a route is probed from
// its session's start and serves on its first passing check.
func DefaultHealthCheck() HealthCheck {
	return HealthCheck{Path: "/health", Interval: 10 * time.Second, Timeout: 5 * time.Second,
		InitialDelay: 30 * time.Second, SuccessThreshold: 1, FailureThreshold: 3}
}

// Complete fills what h leaves out from DefaultHealthCheck.
func (h HealthCheck) Complete() HealthCheck {
	d := DefaultHealthCheck()
	if h.Path == "" {
		h.Path = d.Path
	}
	if h.Interval <= 0 {
		h.Interval = d.Interval
	}
	if h.Timeout <= 0 {
		h.Timeout = d.Timeout
	}
	if h.InitialDelay < 0 {
		h.InitialDelay = 0
	}
	if h.SuccessThreshold <= 0 {
		h.SuccessThreshold = d.SuccessThreshold
	}
	if h.FailureThreshold <= 0 {
		h.FailureThreshold = d.FailureThreshold
	}
	return h
}

// Stale is how old the latest check result may be before it no longer
// says anything about the route: a missed interval or two is tolerated.
func (h HealthCheck) Stale() time.Duration { return 3*h.Interval + h.Timeout }

// DeploymentSpec is what each route's session is created from, in the
// terms of a session request so that it goes through the same checks.
type DeploymentSpec struct {
	Image         string            `json:"image"`
	Resources     map[string]string `json:"resources,omitempty"`
	Command       []string          `json:"command,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	ResourceGroup string            `json:"resource_group,omitempty"`
}

// Deployment is a model-serving deployment: a desired number of replica
// routes of one spec, kept healthy.
type Deployment struct {
	ID              DeploymentID
	Name            string
	Owner           Owner
	Status          DeploymentStatus
	StatusChangedAt time.Time
	CreatedAt       time.Time
	// Replicas is the desired number of routes; 0 while destroying.
	Replicas int
	Spec     DeploymentSpec
	Health   HealthCheck
	// StartFailures counts the routes that failed to start since one last
	// became HEALTHY; NextStartAt is when the next may be created. Both
	// are stored so a restarted manager keeps backing off.
	StartFailures int
	NextStartAt   time.Time
	// Revision counts the spec's changes; a route runs the revision it
	// was started with. PrevSpec is the spec of Revision-1 while a rollout
	// to Revision may still fail back to it.
	Revision int
	PrevSpec *DeploymentSpec
	// MaxSurge is how many routes a rollout may run beyond Replicas.
	MaxSurge int
	// Autoscale, when set, sizes Replicas from the load; ScaledAt is when
	// it last did, for its cooldown.
	Autoscale *Autoscale
	ScaledAt  time.Time
}

// Autoscale sizes a deployment from the requests in flight on its routes,
// as the managers' proxies measure them: Target per route, between Min
// and Max replicas, changing at most once per Cooldown.
type Autoscale struct {
	Min      int           `json:"min"`
	Max      int           `json:"max"`
	Target   float64       `json:"target"`
	Cooldown time.Duration `json:"cooldown"`
}

// Want is the replicas load calls for: enough routes that each carries at
// most Target requests in flight, clamped to [Min, Max].
func (a Autoscale) Want(load float64) int {
	n := a.Min
	if a.Target > 0 {
		n = int(math.Ceil(load/a.Target - 1e-9))
	}
	return max(a.Min, min(a.Max, n))
}

// Route is one replica: one inference session and how healthy it is.
type Route struct {
	ID              RouteID
	Deployment      DeploymentID
	Session         SessionID
	Status          RouteStatus
	StatusReason    string
	StatusChangedAt time.Time
	CreatedAt       time.Time
	// Successes and Failures count consecutive health check results;
	// CheckedAt is when the latest was taken (zero: never).
	Successes int
	Failures  int
	CheckedAt time.Time
	// Endpoint is where the route serves, host:port, once known.
	Endpoint string
	// Revision is the deployment's spec revision the route runs.
	Revision int
	// Served is whether the route was ever HEALTHY: the end of one that
	// never was counts as a failed start for the deployment's backoff.
	Served bool
	// SessionStatus is the route's session's status, read with the route
	// so that a route whose session ended is never taken for live.
	SessionStatus SessionStatus
}

// DeploymentHistoryEntry is one handler outcome for a deployment (Route
// empty) or one of its routes. From and To are status names, since a
// deployment and its routes have statuses of different types.
type DeploymentHistoryEntry = Record[DeploymentID, string, HandlerName, RouteResult]
