package v1

import "time"

// HealthCheck is how a deployment's routes are probed: GET path on the
// route's port, healthy iff it answers 200 within timeout. Durations are
// Go durations ("5s"); fields left out take the defaults named here.
type HealthCheck struct {
	// Path defaults to /health.
	Path string `json:"path,omitempty"`
	// Port is the kernel's service port to probe; 0 (default) its first.
	Port int `json:"port,omitempty"`
	// Interval between checks of one route (default 10s).
	Interval string `json:"interval,omitempty"`
	// Timeout of one check (default 5s).
	Timeout string `json:"timeout,omitempty"`
	// InitialDelay is how long after the route's session starts a failed
	// check is forgiven, not counted (default 30s). Checks start at once,
	// and a passing one counts at once.
	InitialDelay string `json:"initial_delay,omitempty"`
	// SuccessThreshold consecutive passes make a route HEALTHY (default 1).
	SuccessThreshold int `json:"success_threshold,omitempty"`
	// FailureThreshold consecutive failures make it UNHEALTHY (default 3).
	FailureThreshold int `json:"failure_threshold,omitempty"`
}

// CreateDeploymentRequest is the body of POST /v1/deployments. Each route
// is an inference session of image with resources, command and env, as
// POST /v1/sessions takes them.
type CreateDeploymentRequest struct {
	Name          string            `json:"name,omitempty"`
	Image         string            `json:"image"`
	Resources     map[string]string `json:"resources,omitempty"`
	Replicas      *int              `json:"replicas,omitempty"`
	Command       []string          `json:"command,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	ResourceGroup string            `json:"resource_group,omitempty"`
	HealthCheck   *HealthCheck      `json:"health_check,omitempty"`
	// MaxSurge is how many routes a rolling update may run beyond the
	// replicas (default 1).
	MaxSurge *int `json:"max_surge,omitempty"`
	// Autoscale, when set, sizes the replicas from the load.
	Autoscale *Autoscale `json:"autoscale,omitempty"`
}

// Autoscale sizes a deployment from the requests in flight on its routes
// as every manager's proxy measures them: ceil(in flight / target)
// replicas, between min (at least 1) and max, changed at most once per
// cooldown (a Go duration, default 60s). Each change is recorded in the
// deployment's history. In an update, max 0 turns autoscaling off.
// Target is a number written as a string, as quantities are ("1.5").
type Autoscale struct {
	Min      int    `json:"min"`
	Max      int    `json:"max"`
	Target   string `json:"target"`
	Cooldown string `json:"cooldown,omitempty"`
}

// UpdateDeploymentRequest is the body of PATCH /v1/deployments/{id}:
// fields left out are kept. A change of image, command, resources or env
// is a rolling update to a new revision.
type UpdateDeploymentRequest struct {
	Replicas  *int              `json:"replicas,omitempty"`
	Image     string            `json:"image,omitempty"`
	Command   []string          `json:"command,omitempty"`
	Resources map[string]string `json:"resources,omitempty"`
	// Env replaces the whole environment when given.
	Env       map[string]string `json:"env,omitempty"`
	MaxSurge  *int              `json:"max_surge,omitempty"`
	Autoscale *Autoscale        `json:"autoscale,omitempty"`
}

// Deployment is a model-serving deployment with its routes.
type Deployment struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	Owner           string            `json:"owner"`
	Status          string            `json:"status" enum:"PENDING,CREATED,SCALING,READY,DEPLOYING,DESTROYING,DESTROYED"`
	StatusChangedAt time.Time         `json:"status_changed_at"`
	CreatedAt       time.Time         `json:"created_at"`
	Replicas        int               `json:"replicas"`
	Image           string            `json:"image"`
	Resources       map[string]string `json:"resources,omitempty"`
	Command         []string          `json:"command,omitempty"`
	Env             map[string]string `json:"env,omitempty"`
	ResourceGroup   string            `json:"resource_group,omitempty"`
	HealthCheck     HealthCheck       `json:"health_check"`
	// StartFailures counts routes that failed to start in a row; no new
	// route starts before NextStartAt.
	StartFailures int        `json:"start_failures"`
	NextStartAt   *time.Time `json:"next_start_at,omitempty"`
	// Revision counts the spec's changes; routes run one each.
	Revision  int        `json:"revision"`
	MaxSurge  int        `json:"max_surge"`
	Autoscale *Autoscale `json:"autoscale,omitempty"`
	// Routes are the routes not yet TERMINATED, oldest first.
	Routes []Route `json:"routes"`
}

// Route is one replica of a deployment: one inference session.
type Route struct {
	ID              string    `json:"id"`
	SessionID       string    `json:"session_id"`
	Status          string    `json:"status" enum:"PROVISIONING,HEALTHY,UNHEALTHY,DEGRADED,TERMINATING,TERMINATED,FAILED_TO_START"`
	StatusReason    string    `json:"status_reason,omitempty"`
	StatusChangedAt time.Time `json:"status_changed_at"`
	CreatedAt       time.Time `json:"created_at"`
	// SessionStatus is the route's session's status; empty when the
	// session does not exist (yet).
	SessionStatus string `json:"session_status,omitempty"`
	// Endpoint is where the route serves (host:port), once known.
	Endpoint string `json:"endpoint,omitempty"`
	Revision int    `json:"revision"`
	// Blockers keep a PROVISIONING route's PENDING session from being
	// placed, as GET /v1/sessions/{id}/why reports them.
	Blockers []Blocker `json:"blockers,omitempty"`
}

// DeploymentHistory is one handler outcome of a deployment or one of its
// routes (route set).
type DeploymentHistory struct {
	At      time.Time `json:"at"`
	Route   string    `json:"route,omitempty"`
	Handler string    `json:"handler"`
	Result  string    `json:"result" enum:"SUCCESS,FAILURE,STALE"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Message string    `json:"message"`
	Attempt int       `json:"attempt"`
}

// DeploymentToken is a credential that opens one deployment's proxy.
// Token is shown once, when it is created.
type DeploymentToken struct {
	ID         string     `json:"id"`
	Deployment string     `json:"deployment"`
	Token      string     `json:"token,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}
