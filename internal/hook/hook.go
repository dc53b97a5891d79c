package hook

import (
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Reasons a hook ends a running session with. Either ends it with outcome
// failure: the session did not finish its work by itself.
const (
	ReasonTimeLimit   = "time limit"
	ReasonIdleTimeout = "idle timeout"
)

// Hook is one session type's extension points.
type Hook interface {
	// OnSchedule completes a session at submission from its group (the
	// default time limit) and checks it against the group; a refusal is a
	// *FieldError naming the request field at fault.
	OnSchedule(s *domain.Session, g domain.ResourceGroup) error
	// OnStart is what the session's kernels are started with.
	OnStart(s domain.Session) Start
	// OnEnd returns why a running session ends at now, or "" when it runs
	// on.
	OnEnd(r Running, now time.Time) string
	// WatchesIdle reports whether the group's idle timeout applies to the
	// type, so the store looks for idle sessions of those types only.
	WatchesIdle() bool
}

// Start is what a hook adds to a kernel's spec.
type Start struct {
	// TimeLimit is handed to the agent as a backstop (SLURM's --time);
	// the coordinator enforces it regardless. 0: none.
	TimeLimit time.Duration
	// Serves: the session's kernels serve HTTP, so the agent gives each a
	// port (SOKOVAN_PORT) and reports it, whatever the image is called.
	Serves bool
}

// Running is a RUNNING session as OnEnd weighs it. Started is when it
// became RUNNING: its time limit counts from there, not from submission,
// so time spent queued or pulling images is not charged. LastActivity is
// zero when its owner never used it.
type Running struct {
	Type         domain.SessionType
	Started      time.Time
	TimeLimit    time.Duration
	LastActivity time.Time
	IdleTimeout  time.Duration
}

// FieldError is a submission a hook refuses, naming the request field.
type FieldError struct {
	Field, Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Registry maps every session type to its hook.
type Registry struct {
	hooks map[domain.SessionType]Hook
}

// New returns a registry of hooks; every session type must have one, so a
// session never goes without.
func New(hooks map[domain.SessionType]Hook) (*Registry, error) {
	for _, t := range domain.SessionTypes() {
		if hooks[t] == nil {
			return nil, fmt.Errorf("hook: no hook for %s sessions", t)
		}
	}
	return &Registry{hooks: hooks}, nil
}

// Standard is the registry sokovan runs with: the one place hooks are
// registered.
func Standard() *Registry {
	r, err := New(map[domain.SessionType]Hook{
		domain.TypeInteractive: Interactive{},
		domain.TypeBatch:       Batch{},
		domain.TypeInference:   Inference{},
	})
	if err != nil {
		panic(err) // the table above covers every type; a test keeps it so
	}
	return r
}

// For returns t's hook.
func (r *Registry) For(t domain.SessionType) Hook { return r.hooks[t] }

// IdleTypes lists the types whose hook watches idleness, sorted.
func (r *Registry) IdleTypes() []domain.SessionType {
	var out []domain.SessionType
	for t, h := range r.hooks {
		if h.WatchesIdle() {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// Batch sessions run a command to its end. They end when a kernel exits —
// the DetectTermination promotion does that for every type, as the main
// kernel's exit is one of those — or at their time limit.
type Batch struct{}

// OnSchedule fills in and checks the time limit.
func (Batch) OnSchedule(s *domain.Session, g domain.ResourceGroup) error { return limit(s, g) }

// OnStart passes the time limit on to the agents.
func (Batch) OnStart(s domain.Session) Start { return Start{TimeLimit: s.TimeLimit} }

// OnEnd ends the session at its time limit.
func (Batch) OnEnd(r Running, now time.Time) string { return overLimit(r, now) }

// WatchesIdle is false: a batch job is not expected to be used.
func (Batch) WatchesIdle() bool { return false }

// Interactive sessions are used by a person through the manager (proxied
// ports, logs). Besides a time limit they end after the group's idle
// timeout without use.
type Interactive struct{}

// OnSchedule fills in and checks the time limit.
func (Interactive) OnSchedule(s *domain.Session, g domain.ResourceGroup) error { return limit(s, g) }

// OnStart passes the time limit on to the agents.
func (Interactive) OnStart(s domain.Session) Start { return Start{TimeLimit: s.TimeLimit} }

// OnEnd ends the session at its time limit, or once it has been idle for
// the idle timeout: since its last activity, or since it started when it
// was never used.
func (Interactive) OnEnd(r Running, now time.Time) string {
	if why := overLimit(r, now); why != "" {
		return why
	}
	if r.IdleTimeout <= 0 || r.Started.IsZero() {
		return ""
	}
	last := r.Started
	if r.LastActivity.After(last) {
		last = r.LastActivity
	}
	if !now.Before(last.Add(r.IdleTimeout)) {
		return ReasonIdleTimeout
	}
	return ""
}

// WatchesIdle is true.
func (Interactive) WatchesIdle() bool { return true }

// Inference sessions are owned by their deployment (internal/deploy),
// which decides their lifetime: it submits one per route, ends the ones it
// scales in, evicts or replaces, and replaces one that ends on its own.
// So this hook ends nothing; it refuses a time limit rather than accept
// one that would end a replica behind its deployment's back, and takes no
// group default.
type Inference struct{}

// OnSchedule refuses a time limit.
func (Inference) OnSchedule(s *domain.Session, _ domain.ResourceGroup) error {
	if s.TimeLimit != 0 {
		return &FieldError{Field: "time_limit", Message: "inference sessions have no time limit: their deployment ends them"}
	}
	return nil
}

// OnStart marks the kernels as serving: an inference session is a
// deployment's route, reached on its port by health checks and the proxy.
func (Inference) OnStart(domain.Session) Start { return Start{Serves: true} }

// OnEnd never ends the session; its deployment does.
func (Inference) OnEnd(Running, time.Time) string { return "" }

// WatchesIdle is false.
func (Inference) WatchesIdle() bool { return false }

// limit applies the group's time limits as SLURM applies a partition's
// DefaultTime and MaxTime: no limit asked takes the default, or the
// maximum when the group has no default; a limit above the maximum is
// refused rather than cut, so a job is never killed earlier than its owner
// planned for.
func limit(s *domain.Session, g domain.ResourceGroup) error {
	if s.TimeLimit < 0 {
		return &FieldError{Field: "time_limit", Message: "must be positive"}
	}
	if s.TimeLimit == 0 {
		s.TimeLimit = g.DefaultTimeLimit
		if s.TimeLimit == 0 {
			s.TimeLimit = g.MaxTimeLimit
		}
	}
	if g.MaxTimeLimit > 0 && s.TimeLimit > g.MaxTimeLimit {
		return &FieldError{Field: "time_limit", Message: fmt.Sprintf("must be at most %s in resource group %s, not %s",
			g.MaxTimeLimit, g.Name, s.TimeLimit)}
	}
	return nil
}

func overLimit(r Running, now time.Time) string {
	if r.TimeLimit > 0 && !r.Started.IsZero() && !now.Before(r.Started.Add(r.TimeLimit)) {
		return ReasonTimeLimit
	}
	return ""
}
