package v1

import "time"

// The objects of an apply file (`sokovan apply -f`) and of POST /v1/apply.
// Each is kind, name and spec, where spec is exactly the body of the
// kind's create route, so a file is checked by the same rules, and
// described by the same schemas, as the API. Name is the identity: among
// the caller's live objects of the kind, the one of that name is the one a
// file means. spec.name may be left out; when given it must equal name.

// Kinds of apply objects.
const (
	KindSession    = "Session"
	KindJob        = "Job"
	KindDeployment = "Deployment"
)

// SessionObject is a session in an apply file.
type SessionObject struct {
	Kind string               `json:"kind" enum:"Session"`
	Name string               `json:"name"`
	Spec CreateSessionRequest `json:"spec"`
}

// JobObject is a job in an apply file, with the members it holds: each
// member is a session of the job (its spec's job is the job's).
type JobObject struct {
	Kind    string           `json:"kind" enum:"Job"`
	Name    string           `json:"name"`
	Spec    CreateJobRequest `json:"spec"`
	Members []MemberObject   `json:"members,omitempty"`
}

// MemberObject is one session of a JobObject.
type MemberObject struct {
	Name string               `json:"name"`
	Spec CreateSessionRequest `json:"spec"`
}

// DeploymentObject is a deployment in an apply file.
type DeploymentObject struct {
	Kind string                  `json:"kind" enum:"Deployment"`
	Name string                  `json:"name"`
	Spec CreateDeploymentRequest `json:"spec"`
}

// Object is one SessionObject, JobObject or DeploymentObject, as its kind
// says. It stays an untyped JSON object on the wire so that the server
// can check it against its kind's shape and name the field at fault; the
// OpenAPI document describes it as oneOf the three.
type Object map[string]any

// ApplyRequest is the body of POST /v1/apply: the objects of one or more
// files, in the order they are applied.
type ApplyRequest struct {
	Objects []Object `json:"objects"`
}

// Apply is the answer of POST /v1/apply: one item per object, in order.
type Apply struct {
	// DryRun: nothing was written; each action is what apply would do.
	DryRun bool        `json:"dry_run"`
	Items  []ApplyItem `json:"items"`
}

// ApplyItem is what apply did (or, in a dry run, would do) with one
// object, or with one member of a job.
type ApplyItem struct {
	// Object is the object's index in the request; Member the member's
	// index in its job's members, absent for the object itself.
	Object int    `json:"object"`
	Member *int   `json:"member,omitempty"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Action string `json:"action" enum:"created,unchanged,updated"`
	// ID is the object's id; in a dry run of a new object, the id it was
	// checked under (a new one is chosen when it is created).
	ID string `json:"id"`
	// Changed names the spec fields an update changes.
	Changed []string `json:"changed,omitempty"`
	// Wait is, in a dry run, what would keep a new session from starting:
	// "starts now" when the scheduler would place it at once, else its
	// blockers as GET /v1/sessions/{id}/why reports them.
	Wait     string    `json:"wait,omitempty"`
	Blockers []Blocker `json:"blockers,omitempty"`
	// EstimatedStart is, in a dry run of a new session, the start the
	// replay of its group estimates with it (and the file's other new
	// sessions) queued; absent when there is none.
	EstimatedStart *time.Time `json:"estimated_start,omitempty"`
	// Array is set for a Session object with spec.array: the object is
	// an array (POST /v1/arrays), ID is the array's id, Array its index
	// spec and Count its number of elements. In a dry run of a new array,
	// Wait, Blockers and EstimatedStart are its first element's, and
	// Elements says the same of each element, in index order.
	Array    string         `json:"array,omitempty"`
	Count    int            `json:"count,omitempty"`
	Elements []ApplyElement `json:"elements,omitempty"`
}

// ApplyElement is, in a dry run of a new array, what one element would
// wait for and when it is estimated to start, as ApplyItem says of a
// session.
type ApplyElement struct {
	Index          int        `json:"index"`
	Wait           string     `json:"wait,omitempty"`
	EstimatedStart *time.Time `json:"estimated_start,omitempty"`
}
