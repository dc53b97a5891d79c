package admit

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/clock"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/hook"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Limits of a session request.
const (
	MaxClusterSize = 64
	MinPriority    = 0
	MaxPriority    = 100
	// DefaultPriority is Backend.AI's.
	DefaultPriority = 10
)

// Limits on the parts of a session request, generous for people and tight
// enough that one request cannot weigh on the store.
const (
	maxNameLen     = 128
	maxImageLen    = 512
	maxArchLen     = 32
	maxListItems   = 64 // depends_on, designated_agents
	maxCommandArgs = 256
	maxCommandLen  = 64 << 10
	maxEnvVars     = 256
	maxEnvValueLen = 32 << 10
	// maxEnvTotal bounds a session's whole environment (names, values and
	// the "=" and NUL of each entry, as execve counts them): it is stored
	// with the session and sent to every agent that runs a kernel.
	maxEnvTotal = 64 << 10
)

var archPattern = regexp.MustCompile(`^[a-z0-9_]+$`)

// Store is what admission reads, and the one write it makes. The store
// engines provide it.
type Store interface {
	GetResourceGroup(ctx context.Context, name string) (domain.ResourceGroup, error)
	GetPolicy(ctx context.Context, scope domain.PolicyScope, name string) (domain.Policy, error)
	// ListAgents gives the group's agents (their catalogs, devices and
	// whether they run commands) and the designated ones.
	ListAgents(ctx context.Context, f store.AgentFilter) ([]domain.Agent, error)
	// CreateSession counts the live PENDING sessions under each limit and
	// creates the session in one transaction, so a cap is exact however
	// many managers submit at once.
	CreateSession(ctx context.Context, s domain.Session, kernels []domain.Kernel, limits ...store.PendingLimit) error
	// CreateArray does for an array and all its elements what
	// CreateSession does for one session, in one transaction.
	CreateArray(ctx context.Context, a domain.Array, elements []store.NewSession, limits ...store.PendingLimit) error
}

// Marker asks for a scheduling round soon (coordinator.Coordinator's
// Mark), so a new session does not wait for the next timer.
type Marker interface {
	Mark()
}

// Clock tells the time (package clock's).
type Clock = clock.Clock

// Deps are what admission works with. Store and Slots are required;
// Hooks nil means hook.Standard(), Clock nil the wall clock, Marker nil
// marks nothing.
type Deps struct {
	Store  Store
	Slots  *domain.Registry
	Hooks  *hook.Registry
	Clock  Clock
	Marker Marker
}

// Config holds what a request may leave out. Zero fields take the
// defaults.
type Config struct {
	// DefaultGroup and DefaultArchitecture fill a request that names
	// none; defaults "default" and "x86_64".
	DefaultGroup        string
	DefaultArchitecture string
}

func (c Config) withDefaults() Config {
	if c.DefaultGroup == "" {
		c.DefaultGroup = "default"
	}
	if c.DefaultArchitecture == "" {
		c.DefaultArchitecture = "x86_64"
	}
	return c
}

// Resolver finds the session a dependency reference names, among those
// the submitter may see. A reference it cannot take (missing, ambiguous)
// is an *Error, whose message admission reports at the dependency's
// field; any other error is a fault.
type Resolver func(ctx context.Context, ref string) (domain.SessionID, error)

// Request is a session as its submitter asks for it. Text fields hold
// what the submitter wrote: parsing them is admission's, so every
// refusal comes from one sequence of checks, in one order, with one
// wording, whoever submits.
type Request struct {
	// ID is the session's id, chosen by the caller: the API a new UUID, a
	// deployment the one its route already names, a simulation the
	// workload's.
	ID    domain.SessionID
	Owner domain.Owner
	Name  string
	// Type defaults to interactive.
	Type  string
	Image string
	// Architecture defaults to Config.DefaultArchitecture.
	Architecture string
	// Resources are one kernel's, slot name to quantity; slots left out
	// get the group's default.
	Resources map[string]string
	// ClusterMode defaults to single-node; ClusterSize to 1, Priority to
	// DefaultPriority.
	ClusterMode string
	ClusterSize *int
	Priority    *int
	// ResourceGroup defaults to Config.DefaultGroup.
	ResourceGroup string
	// DependsOn are references that Resolve reads; it is needed only when
	// there are any.
	DependsOn []string
	Resolve   Resolver
	// StartsAt is RFC 3339; TimeLimit a Go duration ("2h"). Empty: none,
	// or the group's default time limit.
	StartsAt  string
	TimeLimit string
	// Preemptible defaults by type (domain.DefaultPreemptible).
	Preemptible *bool
	Requeue     bool
	// DesignatedStrict defaults to true when agents are designated.
	DesignatedAgents []string
	DesignatedStrict *bool
	Command          []string
	Env              map[string]string
}

// Admitter admits sessions. It keeps no state between requests, so any
// number of callers may share one.
type Admitter struct {
	store  Store
	slots  *domain.Registry
	hooks  *hook.Registry
	clock  Clock
	marker Marker
	cfg    Config
}

// New returns an Admitter.
func New(d Deps, cfg Config) *Admitter {
	if d.Hooks == nil {
		d.Hooks = hook.Standard()
	}
	d.Clock = clock.Or(d.Clock)
	return &Admitter{store: d.Store, slots: d.Slots, hooks: d.Hooks, clock: d.Clock, marker: d.Marker,
		cfg: cfg.withDefaults()}
}

// Admit builds the session and submits it: what a caller with nothing
// to check in between does.
func (a *Admitter) Admit(ctx context.Context, req Request) (domain.Session, error) {
	sess, kernels, err := a.Build(ctx, req)
	if err != nil {
		return domain.Session{}, err
	}
	if err := a.Submit(ctx, sess, kernels); err != nil {
		return domain.Session{}, err
	}
	return sess, nil
}

// Build checks a request completely and turns it into the records to
// store: the PENDING session, completed from its group, and its kernels.
// It reads the store but never writes. The owner's policies are
// Submit's, so a caller may check what it adds (a job's rules) between.
func (a *Admitter) Build(ctx context.Context, req Request) (domain.Session, []domain.Kernel, error) {
	if req.ID == "" {
		return domain.Session{}, nil, errors.New("admit: a request needs the session's id")
	}
	now := a.clock.Now().UTC().Truncate(time.Microsecond) // the precision both stores keep
	sess := domain.Session{ID: req.ID, Owner: req.Owner, Status: domain.SessionPending, CreatedAt: now, StatusChangedAt: now}
	// Checks that read the store come last: a request that is wrong on
	// its face costs no query.
	if err := a.admitContent(req, &sess); err != nil {
		return domain.Session{}, nil, err
	}
	if err := admitShape(req, &sess); err != nil {
		return domain.Session{}, nil, err
	}
	g, err := a.admitGroup(ctx, req, &sess)
	if err != nil {
		return domain.Session{}, nil, err
	}
	groupAgents, err := a.fitGroup(ctx, req, &sess, g)
	if err != nil {
		return domain.Session{}, nil, err
	}
	deps, err := dependencies(ctx, req)
	if err != nil {
		return domain.Session{}, nil, err
	}
	sess.DependsOn = deps
	agents, err := a.designated(ctx, g.Name, req.DesignatedAgents)
	if err != nil {
		return domain.Session{}, nil, err
	}
	sess.DesignatedAgents = agents
	sess.DesignatedStrict = len(agents) > 0 && (req.DesignatedStrict == nil || *req.DesignatedStrict)
	if e := checkCommandRunnable(groupAgents, g.Name, sess.Command); e != nil {
		return domain.Session{}, nil, e
	}
	return sess, Kernels(sess, now), nil
}

// admitContent sets what the session runs: its name, type, image,
// architecture and per-kernel resources.
func (a *Admitter) admitContent(req Request, sess *domain.Session) error {
	if e := CleanText("name", req.Name, maxNameLen); e != nil {
		return e
	}
	if _, _, element := domain.SplitArrayElementName(req.Name); element {
		return invalid("name", "%q is how an array's element is named (name[index]); choose another name", req.Name)
	}
	sess.Name = req.Name
	sess.Type = domain.TypeInteractive
	if req.Type != "" {
		t, err := domain.ParseSessionType(req.Type)
		if err != nil {
			return invalid("type", "%v", err)
		}
		sess.Type = t
	}
	if strings.TrimSpace(req.Image) == "" {
		return invalid("image", "an image is required")
	}
	if e := CleanText("image", req.Image, maxImageLen); e != nil {
		return e
	}
	if strings.ContainsAny(req.Image, " \t") {
		return invalid("image", "must not contain spaces")
	}
	sess.Image = req.Image
	sess.Architecture = a.cfg.DefaultArchitecture
	if req.Architecture != "" {
		if len(req.Architecture) > maxArchLen || !archPattern.MatchString(req.Architecture) {
			return invalid("architecture", "must be 1 to %d of a-z, 0-9 and _ (such as x86_64 or aarch64)", maxArchLen)
		}
		sess.Architecture = req.Architecture
	}
	requested, e := ParseSlots(a.slots, "resources", req.Resources, false)
	if e != nil {
		return e
	}
	sess.Requested = requested
	return nil
}

// admitShape sets how the session runs: its cluster, priority, start,
// time limit, preemption, command and environment.
func admitShape(req Request, sess *domain.Session) error {
	sess.ClusterMode = domain.SingleNode
	if req.ClusterMode != "" {
		m, err := domain.ParseClusterMode(req.ClusterMode)
		if err != nil {
			return invalid("cluster_mode", "%v", err)
		}
		sess.ClusterMode = m
	}
	sess.ClusterSize = 1
	if req.ClusterSize != nil {
		if n := *req.ClusterSize; n < 1 || n > MaxClusterSize {
			return invalid("cluster_size", "must be 1 to %d, not %d", MaxClusterSize, n)
		}
		sess.ClusterSize = *req.ClusterSize
	}
	sess.Priority = DefaultPriority
	if req.Priority != nil {
		if p := *req.Priority; p < MinPriority || p > MaxPriority {
			return invalid("priority", "must be %d to %d, not %d", MinPriority, MaxPriority, p)
		}
		sess.Priority = *req.Priority
	}
	if req.StartsAt != "" {
		at, err := time.Parse(time.RFC3339, req.StartsAt)
		if err != nil {
			return invalid("starts_at", "must be an RFC 3339 time such as 2026-03-01T12:00:00Z")
		}
		sess.StartsAt = at.UTC().Truncate(time.Microsecond)
	}
	if req.TimeLimit != "" {
		d, err := time.ParseDuration(req.TimeLimit)
		if err != nil || d <= 0 {
			return invalid("time_limit", "must be a positive duration such as \"2h\" or \"90m\", not %q", req.TimeLimit)
		}
		sess.TimeLimit = d
	}
	sess.Preemptible, sess.Requeue = domain.DefaultPreemptible(sess.Type), req.Requeue
	if req.Preemptible != nil {
		sess.Preemptible = *req.Preemptible
	}
	if e := checkCommand(req.Command); e != nil {
		return e
	}
	sess.Command = req.Command
	if e := checkEnv(req.Env); e != nil {
		return e
	}
	sess.Env = req.Env
	return nil
}

// admitGroup reads the session's resource group and checks that it takes
// the session; the type's hook then applies the group's time limits.
func (a *Admitter) admitGroup(ctx context.Context, req Request, sess *domain.Session) (domain.ResourceGroup, error) {
	group := a.cfg.DefaultGroup
	if req.ResourceGroup != "" {
		group = req.ResourceGroup
	}
	if !ValidID(group) {
		return domain.ResourceGroup{}, invalid("resource_group", "no such resource group %q", group)
	}
	g, err := a.store.GetResourceGroup(ctx, group)
	if errors.Is(err, store.ErrNotFound) {
		return domain.ResourceGroup{}, invalid("resource_group", "no such resource group %q", group)
	}
	if err != nil {
		return domain.ResourceGroup{}, err
	}
	if !g.State.Admits() {
		// Seed 003: a DRAINING group takes no additions; it only finishes
		// what it holds so it can be removed. This read refuses early; the
		// store's CreateSession decides exactly.
		return domain.ResourceGroup{}, groupClosed(g.Name, g.State)
	}
	if !g.Allows(sess.Type) {
		types := make([]string, len(g.AllowedTypes))
		for i, t := range g.AllowedTypes {
			types[i] = string(t)
		}
		return domain.ResourceGroup{}, invalid("type", "resource group %s does not run %s sessions (it runs %s)", g.Name, sess.Type,
			strings.Join(types, ", "))
	}
	sess.ResourceGroup = g.Name
	// The type's hook fills in the group's default time limit and holds
	// the request to the group's maximum.
	if err := a.hooks.For(sess.Type).OnSchedule(sess, g); err != nil {
		var fe *hook.FieldError
		if errors.As(err, &fe) {
			return domain.ResourceGroup{}, invalid(fe.Field, "%s", fe.Message)
		}
		return domain.ResourceGroup{}, err
	}
	return g, nil
}

// fitGroup completes the session's request with the group's defaults and
// checks that some agent of the group could run it; it answers the
// group's agents, read once for these checks and the later ones.
func (a *Admitter) fitGroup(ctx context.Context, req Request, sess *domain.Session, g domain.ResourceGroup) ([]domain.Agent, error) {
	groupAgents, err := a.store.ListAgents(ctx, store.AgentFilter{Group: g.Name})
	if err != nil {
		return nil, err
	}
	if e := checkImage(groupAgents, g.Name, sess.Image); e != nil {
		return nil, e
	}
	// The group fills what the request leaves out, so every kernel carries
	// a cpu and mem request: it is what the runtime turns into limits and
	// what quotas are charged.
	full, below := g.CompleteRequest(a.slots, sess.Requested, func(id domain.SlotID) bool {
		_, named := req.Resources[a.slots.Type(id).Name]
		return named
	})
	if below != nil {
		t := a.slots.Type(below.Slot)
		return nil, invalid("resources."+t.Name, "must be at least %s in resource group %s, not %s",
			domain.FormatQuantity(t.Kind, below.Minimum), g.Name, domain.FormatQuantity(t.Kind, below.Requested))
	}
	sess.Requested = full
	if e := fitsGroup(a.slots, groupAgents, g.Name, *sess); e != nil {
		return nil, e
	}
	return groupAgents, nil
}

// Kernels are a session's kernels as it is created: one per cluster
// index, the first the main one, each asking for the session's
// per-kernel request, with the id <session>-k<index> that agents and
// logs show.
func Kernels(sess domain.Session, now time.Time) []domain.Kernel {
	kernels := make([]domain.Kernel, sess.ClusterSize)
	for i := range kernels {
		role := domain.RoleSub
		if i == 0 {
			role = domain.RoleMain
		}
		kernels[i] = domain.Kernel{ID: domain.KernelIDOf(sess.ID, i), SessionID: sess.ID,
			ClusterRole: role, ClusterIdx: i, Image: sess.Image, Architecture: sess.Architecture,
			Requested: sess.Requested.Clone(), Status: domain.KernelPending, StatusChangedAt: now}
	}
	return kernels
}

// Submit stores a session Build made, under its owner's policies, and
// asks for a scheduling round.
func (a *Admitter) Submit(ctx context.Context, sess domain.Session, kernels []domain.Kernel) error {
	policies, err := a.policies(ctx, sess.Owner)
	if err != nil {
		return err
	}
	if e := a.hardLimits(sess, policies); e != nil {
		return e
	}
	caps := pendingCaps(policies)
	// The store counts and creates in one transaction, serialised per cap
	// across every manager of the database, so no two submits can both
	// take the last place.
	if err := a.store.CreateSession(ctx, sess, kernels, caps...); err != nil {
		var full *store.LimitError
		if errors.As(err, &full) {
			return &Error{Class: TooMany, Message: fmt.Sprintf(
				"%s %s already has %d PENDING sessions, the most its policy allows (max_pending_sessions %d); "+
					"wait for one to start, or end one", full.Limit.Scope, full.Limit.Name, full.Pending, full.Limit.Max)}
		}
		if errors.Is(err, store.ErrNameTaken) {
			return conflict("name", "you already have a live session named %q; end it, or choose another name", sess.Name)
		}
		return storeRefusal(err)
	}
	if a.marker != nil {
		a.marker.Mark()
	}
	return nil
}

// CheckLimits is what Submit checks of the owner's policies before it
// writes, for a dry run that writes nothing: a session asking for more
// than a policy allows at once is refused. The pending caps are counted
// only by the write itself.
func (a *Admitter) CheckLimits(ctx context.Context, sess domain.Session) error {
	policies, err := a.policies(ctx, sess.Owner)
	if err != nil {
		return err
	}
	if e := a.hardLimits(sess, policies); e != nil {
		return e
	}
	return nil
}

// storeRefusal turns the store's answer to a creation into a refusal
// where it is one.
func storeRefusal(err error) error {
	var closed *store.GroupClosedError
	if errors.As(err, &closed) {
		// The group changed state after Build read it; the store's
		// answer is the one that holds.
		return groupClosed(closed.Group, closed.State)
	}
	if errors.Is(err, store.ErrNotFound) {
		// What it refers to was checked a moment ago; nothing is ever
		// deleted, so this is a store fault, not the submitter's.
		return fmt.Errorf("create session: %w", err)
	}
	return err
}

// groupClosed refuses a session to a group that accepts no new ones.
func groupClosed(group string, st domain.GroupState) *Error {
	return conflict("resource_group", "resource group %s is %s and accepts no new sessions", group, st)
}

// Route is the request a deployment's route is made of: an inference
// session of the deployment's spec. The API checks a spec with it before
// storing the deployment, and the controller submits each route with it,
// so a spec that passes is one whose routes are admitted.
func Route(id domain.SessionID, owner domain.Owner, name string, spec domain.DeploymentSpec) Request {
	return Request{ID: id, Owner: owner, Name: name, Type: string(domain.TypeInference), Image: spec.Image,
		Resources: spec.Resources, Command: spec.Command, Env: spec.Env, ResourceGroup: spec.ResourceGroup}
}
