package store

import (
	"context"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// Store is everything an engine offers, as the conformance suite drives it:
// the per-aggregate interfaces below, composed. Production callers should
// not depend on it whole: a port embeds the aggregates it uses (nearly)
// whole and names the few methods it takes from others.
//
// Every method is one transaction. Errors are of the classes in errors.go:
// a missing row (or one a new row refers to) is ErrNotFound, a duplicate
// key ErrConflict, a row not in the expected state ErrGuardFailed, input
// the schema refuses ErrInvalid, an undecodable stored row a
// *CorruptRowError, and a cancelled context its own error.
type Store interface {
	Groups
	Agents
	AgentReports
	Jobs
	Arrays
	Sessions
	Scheduling
	Feed
	Users
	Policies
	Usage
	Deployments
	Identities

	Close() error
}

// Groups stores resource groups' configuration and their removal. Each
// method is one transaction.
type Groups interface {
	// PutResourceGroup creates or replaces a group's configuration; its
	// round-robin cursor is kept. A removed group's name is created again
	// with g; State REMOVED is ErrInvalid (RemoveResourceGroup is the way
	// there).
	PutResourceGroup(ctx context.Context, g domain.ResourceGroup) error
	// GetResourceGroup and ListResourceGroups never see a removed group:
	// to them it is ErrNotFound, absent.
	GetResourceGroup(ctx context.Context, name string) (domain.ResourceGroup, error)
	ListResourceGroups(ctx context.Context) ([]domain.ResourceGroup, error)
	// RemoveResourceGroup takes a DRAINING group that holds no live
	// session and no ALIVE or LOST agent to REMOVED at at, and returns it
	// as it was last seen, with State REMOVED. The counts and the change
	// are one transaction under the group's row lock, which creations and
	// agent registrations share, so neither can slip in. Otherwise it is a
	// *GroupRemoveError (an ErrConflict) naming what is in the way;
	// ErrNotFound for no such group or one already removed.
	RemoveResourceGroup(ctx context.Context, name string, at time.Time) (domain.ResourceGroup, error)
}

// Agents reads agents and makes the manager's decisions about them:
// status, cordon, drain, retirement. Each method is one transaction.
type Agents interface {
	GetAgent(ctx context.Context, id domain.AgentID) (domain.Agent, error)
	ListAgents(ctx context.Context, f AgentFilter) ([]domain.Agent, error)
	SetAgentStatus(ctx context.Context, id domain.AgentID, status domain.AgentStatus) error
	SetAgentSchedulable(ctx context.Context, id domain.AgentID, schedulable bool) error
	// RetireAgent moves a LOST agent that holds no kernel to TERMINATED
	// and returns it; anything else is refused with an AgentRetireError
	// (ErrNotFound for no such agent). The check and the move are one
	// transaction on the locked row, so a registration racing it either
	// came first (the agent is ALIVE and stays) or comes after and brings
	// the agent back. The epoch moves on, so the retired incarnation's
	// heartbeats and guarded registrations are told to register afresh.
	RetireAgent(ctx context.Context, id domain.AgentID) (domain.Agent, error)
	// DrainAgent makes the agent unschedulable and records its drain (a
	// zero deadline: none); draining again keeps the start and replaces
	// the deadline. SetAgentSchedulable(true) ends the drain.
	DrainAgent(ctx context.Context, id domain.AgentID, started, deadline time.Time) error
	ListAgentDrains(ctx context.Context) ([]domain.AgentDrain, error)
}

// AgentReports records what an agent says of itself: that it is there,
// alive, how large, and why its kernels wait. Each method is one
// transaction.
type AgentReports interface {
	// RegisterAgent inserts a new agent (epoch 1, ALIVE, nothing occupied)
	// or re-registers a known one: its epoch grows by one, it becomes
	// ALIVE, and its description and capacity are replaced, while its
	// occupied slots, kernel count and schedulable flag are kept (kernels
	// may still run there; a cordon survives a restart).
	//
	// With a guard, the registration happens only if the agent's epoch is
	// still the one the caller judged it by (0: no such agent yet), and
	// fails with ErrGuardFailed otherwise, so a decision made on a read
	// cannot be overtaken by another registration in between. A removed
	// group takes no agent (ErrGroupRemoved).
	RegisterAgent(ctx context.Context, a domain.Agent, now time.Time, guard ...RegisterGuard) (domain.Agent, error)
	// Heartbeat records a sign of life from the agent's current
	// incarnation; an older epoch gets ErrGuardFailed, and so does an
	// agent that is not ALIVE: one declared LOST (cut off by the network,
	// say) and heard from again must register, under a new epoch, to be
	// ALIVE again.
	Heartbeat(ctx context.Context, id domain.AgentID, epoch int64, now time.Time) error
	// SetAgentCapacity replaces the capacity of the agent's current
	// incarnation and reports whether it changed; an older epoch gets
	// ErrGuardFailed. Occupied slots and kernels stay: a capacity that
	// shrinks below what is occupied evicts nothing, the scheduler just
	// finds no room there until kernels end.
	SetAgentCapacity(ctx context.Context, id domain.AgentID, epoch int64, capacity domain.Vec) (bool, error)
	// NoteWaitingKernels records why the agent's CREATING kernels wait to
	// start (a SLURM queue's reason) as their status reason, and returns
	// how many rows changed; other kernels are left alone.
	NoteWaitingKernels(ctx context.Context, agent domain.AgentID, notes map[domain.KernelID]string) (int, error)
}

// Jobs stores jobs, their member sessions' view and their history. Each
// method is one transaction.
type Jobs interface {
	// CreateJob stores a new job. A session joins it through
	// domain.Session.Job at CreateSession (ErrNotFound for no such job).
	CreateJob(ctx context.Context, j domain.Job) error
	GetJob(ctx context.Context, id domain.JobID) (domain.Job, error)
	// ListJobs returns jobs oldest first.
	ListJobs(ctx context.Context, f JobFilter) ([]domain.Job, error)
	// JobMembers returns the job's sessions oldest first, without their
	// command, environment and dependencies.
	JobMembers(ctx context.Context, id domain.JobID) ([]domain.Session, error)
	// LiveJobs returns every job not yet EXPIRED, FAILED or REJECTED,
	// oldest first, each with its members as JobMembers gives them, read
	// together: one pass of the job reconciler reads the jobs once.
	LiveJobs(ctx context.Context) ([]JobWithMembers, error)
	// MoveJob moves the job from e.From to e.To, with e.Message as its
	// reason, and records e in its history, in one transaction;
	// ErrGuardFailed when the job is no longer in e.From.
	MoveJob(ctx context.Context, e domain.JobHistoryEntry) error
	JobHistory(ctx context.Context, id domain.JobID) ([]domain.JobHistoryEntry, error)
}

// Arrays stores session arrays: one row per array, whose elements are
// ordinary sessions naming it (domain.Session.Array). Each method is one
// transaction.
type Arrays interface {
	// CreateArray stores the array and every element (a new PENDING
	// session with its kernels and dependencies, as CreateSession takes
	// one), all or nothing, in one transaction. ErrNameTaken when a live
	// session or a live array of the owner already has a.Name; each
	// limit counts every element, so an array that would take its scope
	// past the limit is refused whole (*LimitError).
	CreateArray(ctx context.Context, a domain.Array, elements []NewSession, limits ...PendingLimit) error
	GetArray(ctx context.Context, id domain.ArrayID) (domain.Array, error)
	// ListArrays returns arrays newest first.
	ListArrays(ctx context.Context, f ArrayFilter) ([]domain.Array, error)
	// ArrayElements returns the array's sessions in index order, without
	// their command, environment and dependencies.
	ArrayElements(ctx context.Context, id domain.ArrayID) ([]domain.Session, error)
	// ArraySummaries counts the elements of each array of ids by status
	// and outcome, in one query; an attempt that preemption requeued is
	// counted once, as its latest attempt.
	ArraySummaries(ctx context.Context, ids []domain.ArrayID) (map[domain.ArrayID]domain.ArraySummary, error)
}

// NewSession is a session to create with its kernels.
type NewSession struct {
	Session domain.Session
	Kernels []domain.Kernel
}

// ArrayFilter selects arrays.
type ArrayFilter struct {
	// User, when set, selects that owner's arrays.
	User string
	// Name, when set, selects the arrays of that exact name; IDPrefix
	// those whose id starts with it.
	Name     string
	IDPrefix string
	// Limit caps the number returned; zero means no cap.
	Limit int
}

// Sessions stores sessions and their kernels through their lifecycle,
// with their handler history and retry counts. Each method is one
// transaction.
type Sessions interface {
	// CreateSession stores a new PENDING session with its PENDING kernels
	// and its dependencies, all or nothing. A name that a live session of
	// the same owner already has is refused with ErrNameTaken, whichever
	// store instance created that one. s.CreatedAt is the creation
	// (and status change) time. Each limit is checked in the same
	// transaction, serialised with every other creation that checks the
	// same limit, whichever store instance makes it; one already reached
	// refuses the session with a *LimitError. A group that no longer
	// admits sessions (DRAINING), as read in the same transaction, refuses
	// it with a *GroupClosedError: none is created after the change
	// commits.
	CreateSession(ctx context.Context, s domain.Session, kernels []domain.Kernel, limits ...PendingLimit) error
	// GetSession returns the session whole, its command and environment
	// included.
	GetSession(ctx context.Context, id domain.SessionID) (SessionWithKernels, error)
	// ListSessions returns sessions oldest first (newest first with
	// f.Newest), without their command and environment (see SessionSpec).
	ListSessions(ctx context.Context, f SessionFilter) ([]domain.Session, error)
	// SessionSpecs returns the command and environment of those of ids
	// that exist.
	SessionSpecs(ctx context.Context, ids []domain.SessionID) (map[domain.SessionID]SessionSpec, error)
	// AvoidAgents adds agents the session failed on to its avoid list
	// (kept in order, each once), so placement tries other agents first.
	AvoidAgents(ctx context.Context, id domain.SessionID, agents []domain.AgentID) error
	// ListKernels returns kernels by session, then cluster index.
	ListKernels(ctx context.Context, f KernelFilter) ([]domain.Kernel, error)
	// TransitionSessions moves those of ids whose status is in from to
	// to.Session (when set), and their kernels that can legally move to
	// to.Kernel (when set), releasing what the kernels stop holding. It
	// returns the sessions that matched the guard, in id order. A move
	// back to PENDING also requires that no kernel has ended: such a
	// session cannot start over.
	TransitionSessions(ctx context.Context, ids []domain.SessionID, from []domain.SessionStatus,
		to domain.Transition, reason string, now time.Time) ([]domain.SessionID, error)
	// MoveSessions is TransitionSessions that returns, for each session
	// moved, the status it left and its creation time, and writes
	// m.Note's history entry for each in the same transaction (when set).
	MoveSessions(ctx context.Context, m Move) ([]Moved, error)
	// DueSessions lists, in one query, the RUNNING sessions that by now
	// are past their time limit or past their group's idle timeout (idle
	// since their last activity, or since they started when they have
	// none), in id order. Idle timeouts apply to idleTypes only. The
	// coordinator's session-type hooks make the final call; this only
	// narrows the sessions they weigh.
	DueSessions(ctx context.Context, now time.Time, idleTypes []domain.SessionType) ([]DueSession, error)
	// NextDue is the earliest instant after after at which DueSessions
	// would find a session, or an agent's drain deadline passes; zero
	// when nothing is due. The coordinator sleeps until then.
	NextDue(ctx context.Context, after time.Time, idleTypes []domain.SessionType) (time.Time, error)
	// TouchSession records that a session's owner used it at at (proxied
	// traffic, logs). Callers rate-limit it; it never moves the time back.
	TouchSession(ctx context.Context, id domain.SessionID, at time.Time) error
	// UpdateKernel applies one agent event to one kernel, guarded by the
	// statuses the caller expects it in, releasing its slots when it stops
	// holding them. It returns the kernel as stored afterwards.
	UpdateKernel(ctx context.Context, u KernelUpdate) (domain.Kernel, error)
	// SessionsMatching returns, in id order, the sessions in one of
	// sessionStatuses whose kernels satisfy match against
	// checkKernelStatuses (seed 001's promotion query); among, when
	// given, narrows it to those sessions.
	SessionsMatching(ctx context.Context, sessionStatuses []domain.SessionStatus,
		checkKernelStatuses []domain.KernelStatus, match domain.Match, among ...domain.SessionID) ([]domain.SessionID, error)

	// AppendHistory records handler outcomes in order. An outcome identical
	// to its session's latest entry (handler, result, from, to, message)
	// merges into it: attempt+1 and the entry's time moves to the new one.
	AppendHistory(ctx context.Context, entries []domain.HistoryEntry) error
	// History returns a session's entries oldest first.
	History(ctx context.Context, id domain.SessionID) ([]domain.HistoryEntry, error)
	// IncrementTries adds one failed try in the phase to each session and
	// returns the new counts.
	IncrementTries(ctx context.Context, phase domain.HandlerName, ids []domain.SessionID) (map[domain.SessionID]int, error)
	// ResetTries forgets the sessions' tries in the phase.
	ResetTries(ctx context.Context, phase domain.HandlerName, ids []domain.SessionID) error
	// Tries returns a session's try counts by phase.
	Tries(ctx context.Context, id domain.SessionID) (map[domain.HandlerName]int, error)
}

// Scheduling is a scheduling round's side of the store: what the round
// reads, when it need not run, and the plan applier. Each method is one
// transaction.
type Scheduling interface {
	// LoadSnapshot reads, in one consistent read, everything one scheduling
	// round of the group needs; its sessions leave out their command and
	// environment, as ListSessions' do.
	LoadSnapshot(ctx context.Context, group string, now time.Time) (framework.Snapshot, error)
	// GroupGenerations returns each resource group's generation: a counter
	// that grows in the same transaction as every change to the group's
	// scheduling input the change feed does not carry — an agent of the
	// group registered, its status or cordon set; the group written; any
	// policy written. Heartbeats, placements and kernel changes leave it
	// alone (the feed has those). With the feed it lets a manager skip a
	// round that cannot place anything new.
	GroupGenerations(ctx context.Context) (map[string]int64, error)
	// ApplyPlan re-checks and applies a plan's placements in order, in one
	// transaction: each is applied whole or reported back in Rejected, never
	// half. The group's round-robin cursor is saved.
	ApplyPlan(ctx context.Context, plan framework.Plan, now time.Time) (ApplyResult, error)
	// PrunePreemptions deletes the preemption records made before before
	// (they matter only within a group's window) and returns how many.
	PrunePreemptions(ctx context.Context, before time.Time) (int64, error)
}

// Feed reads and prunes the change feed. Each method is one transaction.
type Feed interface {
	// Changes reads the change feed: every status change of a session (its
	// creation included) and of a kernel, recorded in the transaction that
	// made it, in feed position order after f.After. Positions only grow,
	// and a change appears at a position only once it is committed, so a
	// reader that passes a position never misses a change before it.
	// Changes of one session or one kernel are in the order they were made.
	Changes(ctx context.Context, f ChangeFilter) ([]Change, error)
	// LastChange returns the position of the latest change, 0 when none.
	LastChange(ctx context.Context) (int64, error)
	// PruneChanges deletes the changes positioned before the first one
	// made at or after before, and returns how many. The latest change is
	// always kept, so LastChange never goes back and positions are never
	// given twice; so are those after the usage rollup's position once it
	// has started (RollupUsage), which it has yet to read.
	PruneChanges(ctx context.Context, before time.Time) (int64, error)
}

// Users stores API users and their tokens' hashes. Each method is one
// transaction.
type Users interface {
	// CreateUser stores a user and the hash of its first token; the token
	// itself is never stored.
	CreateUser(ctx context.Context, u User, tokenHash []byte) error
	// ListUsers returns every user by name.
	ListUsers(ctx context.Context) ([]User, error)
	UserByTokenHash(ctx context.Context, tokenHash []byte) (User, error)
	// ReplaceTokens makes tokenHash the user's only token, expiring at
	// expires (zero: never): every token it had stops working in the same
	// transaction. ErrNotFound for no such user.
	ReplaceTokens(ctx context.Context, userID string, tokenHash []byte, at, expires time.Time) error
}

// Policies stores the policies of users, projects and domains. Each
// method is one transaction.
type Policies interface {
	// PutPolicy creates or replaces the policy of a user, project or domain.
	PutPolicy(ctx context.Context, p domain.Policy) error
	GetPolicy(ctx context.Context, scope domain.PolicyScope, name string) (domain.Policy, error)
}

// Usage samples and sums what the cluster holds: utilisation per group
// over time, holdings per user now. Each method is one transaction.
type Usage interface {
	// RecordUtilisation takes one utilisation sample at now: for every
	// resource group with an ALIVE agent, per slot, the summed capacity
	// and occupancy of its ALIVE agents. Agents LOST or TERMINATED count
	// toward neither. A second sample at the same time replaces the first.
	RecordUtilisation(ctx context.Context, now time.Time) error
	// Utilisation returns the group's samples taken in [from, to), averaged
	// per step counted from from: one point per step and slot that has
	// samples, by step then slot. No samples (or an unknown group) is an
	// empty series; a step under a microsecond is ErrInvalid.
	Utilisation(ctx context.Context, group string, from, to time.Time, step time.Duration) ([]UtilisationPoint, error)
	// PruneUtilisation deletes the samples taken before before and returns
	// how many.
	PruneUtilisation(ctx context.Context, before time.Time) (int64, error)
	// HeldByUser sums, in the database, what each user's kernels hold
	// (SCHEDULED through TERMINATING), per slot; a user holding nothing is
	// absent.
	HeldByUser(ctx context.Context) (map[string]domain.Vec, error)
	// RollupUsage credits what kernels held up to now to the hourly
	// accounting history (usage_hourly): it reads the change feed's kernel
	// changes after its watermark, opens a hold when a kernel starts
	// holding slots and closes it when it stops, credits every hold up to
	// now, and moves the watermark, in one transaction. A crash before the
	// commit leaves everything as it was; a second pass credits only what
	// came after the first. The first pass ever starts from the kernels
	// holding slots then and the feed's head. A now before the last pass
	// credits nothing.
	RollupUsage(ctx context.Context, now time.Time) (RollupResult, error)
	// PruneUsage deletes the hourly history of hours that began before
	// before and returns how many rows.
	PruneUsage(ctx context.Context, before time.Time) (int64, error)
	// UsageHistory returns the hourly history in [f.Since, f.Until), one
	// row per hour, key and slot that has usage, by hour then key then
	// slot; f.By picks the key.
	UsageHistory(ctx context.Context, f UsageFilter) ([]UsageRow, error)
}

// RollupResult says what a RollupUsage pass did.
type RollupResult struct {
	// Changes is how many kernel changes it read; Opened and Closed the
	// holds it began and ended; Rows the hourly rows it added to.
	Changes, Opened, Closed, Rows int
	// From and To are the span it credited open holds over.
	From, To time.Time
}

// UsageBy is what UsageHistory rows are keyed by.
type UsageBy string

const (
	UsageByUser    UsageBy = "user"
	UsageByProject UsageBy = "project"
	UsageByDomain  UsageBy = "domain"
	UsageByGroup   UsageBy = "group"
)

// UsageFilter selects hourly history. Zero fields select everything; an
// empty By keys by user.
type UsageFilter struct {
	Since, Until time.Time
	By           UsageBy
	Group        string
	User         string
	Project      string
	Slot         string
}

// UsageRow is one key's use of one slot over one hour: Amount is
// slot-seconds in the slot's stored unit (thousandths of a cpu, bytes,
// thousandths of a device) — cpu-hours are Amount / 1000 / 3600.
type UsageRow struct {
	Hour   time.Time
	Key    string
	Slot   string
	Amount float64
}

// AgentFilter selects agents; zero fields select everything.
type AgentFilter struct {
	IDs      []domain.AgentID
	Group    string
	Statuses []domain.AgentStatus
	// SilentSince, when set, selects only agents not heard from since:
	// their last heartbeat is before it, or they have none.
	SilentSince time.Time
}

// SessionFilter selects sessions; zero fields select everything.
type SessionFilter struct {
	// IDs, when not empty, selects only these sessions.
	IDs      []domain.SessionID
	Statuses []domain.SessionStatus
	User     string
	Project  string
	Domain   string
	Group    string
	Types    []domain.SessionType
	// Name, when set, selects the sessions of that exact name.
	Name string
	// IDPrefix, when set, selects the sessions whose id starts with it.
	IDPrefix string
	// EndedSince, when set, leaves out the sessions that ended before it;
	// live ones are always kept.
	EndedSince time.Time
	// Newest lists newest first instead of oldest first.
	Newest bool
	// After, when set, pages a listing: only the sessions after this one
	// in listing order are returned, none when it does not exist.
	After domain.SessionID
	// Limit caps the number returned; zero means no cap.
	Limit int
}

// RegisterGuard is what a registration expects to find: the agent's epoch
// when the caller read it, or 0 when the caller found no such agent.
type RegisterGuard struct {
	Epoch int64
}

// PendingLimit caps the PENDING sessions of one user, project or domain
// (Name, by Scope): a session is refused when Max of them are already
// PENDING. Max is at least 1.
type PendingLimit struct {
	Scope domain.PolicyScope
	Name  string
	Max   int
}

// JobFilter selects jobs; zero fields select everything.
type JobFilter struct {
	User string
	// Live keeps the jobs not yet EXPIRED, FAILED or REJECTED.
	Live bool
}

// KernelFilter selects kernels; zero fields select everything.
type KernelFilter struct {
	IDs      []domain.KernelID
	Sessions []domain.SessionID
	Agents   []domain.AgentID
	Statuses []domain.KernelStatus
}

// ChangeFilter selects changes of the feed; zero fields select everything.
type ChangeFilter struct {
	// After is the position to read after; 0 reads from the start.
	After int64
	// User keeps the changes of that user's sessions only.
	User     string
	Sessions []domain.SessionID
	// Limit caps the number returned; zero means no cap.
	Limit int
}

// ChangeKind says what changed status.
type ChangeKind string

// Change kinds.
const (
	ChangeSession ChangeKind = "session"
	ChangeKernel  ChangeKind = "kernel"
)

// Change is one status change in the feed. From and To are status names as
// the domain's String writes them (session or kernel statuses by Kind);
// From is empty when a session was created.
type Change struct {
	Pos     int64
	Kind    ChangeKind
	Session domain.SessionID
	// Kernel is empty for a session's change.
	Kernel domain.KernelID
	Owner  string
	From   string
	To     string
	Reason string
	// Agent is a kernel's agent: the one it is on, or the one it left when
	// sent back to PENDING. Empty for sessions.
	Agent    domain.AgentID
	ExitCode *int
	At       time.Time
}

// UtilisationPoint is one slot of one group over one step of a
// utilisation series. Capacity and Occupied are the averages of the
// step's samples in the slot's stored unit (thousandths for counts and
// shares, bytes for bytes); Samples is how many there were.
type UtilisationPoint struct {
	// At is where the step starts.
	At       time.Time
	Slot     string
	Capacity float64
	Occupied float64
	Samples  int
}

// SessionSpec is what a session's kernels start with beyond their own
// rows: the user's command and environment. Each may run to tens of
// kilobytes, so only GetSession and SessionSpecs read them: a scheduling
// cycle or a listing that read them for every session would spend its time
// decoding them.
type SessionSpec struct {
	Command []string
	Env     map[string]string
}

// JobWithMembers is a job with its member sessions, oldest first.
type JobWithMembers struct {
	Job     domain.Job
	Members []domain.Session
}

// SessionWithKernels is a session with its kernels in cluster index order.
type SessionWithKernels struct {
	Session domain.Session
	Kernels []domain.Kernel
}

// Role is what a user may do.
type Role string

// Roles.
const (
	RoleAdmin Role = "admin"
	RoleUser  Role = "user"
)

// User is an API user; it owns sessions as Owner{User: Name, ...}.
type User struct {
	ID        string
	Name      string
	Role      Role
	Project   string
	Domain    string
	CreatedAt time.Time
	// TokenExpiresAt is when the token the user was found by
	// (UserByTokenHash) expires; zero for a token that never does, and
	// for a user read otherwise. The caller judges it by its own clock.
	TokenExpiresAt time.Time
}

// KernelUpdate is one agent event for one kernel.
type KernelUpdate struct {
	Kernel domain.KernelID
	// From are the statuses the kernel must be in for the event to apply.
	From []domain.KernelStatus
	To   domain.KernelStatus
	// ExitCode, when set, is stored; ContainerID, when not empty, too.
	ExitCode    *int
	ContainerID string
	Reason      string
	// ServicePorts, when not empty, replace the kernel's.
	ServicePorts []domain.ServicePort
	Now          time.Time
}

// ApplyResult says what became of a plan's placements.
type ApplyResult struct {
	// Applied are the sessions now SCHEDULED, in plan order.
	Applied []domain.SessionID
	// Rejected are placements dropped whole, in plan order.
	Rejected []Rejection
	// Preempted are the plan's preemptions applied: victims still
	// RUNNING and preemptors still PENDING when locked, now TERMINATING.
	Preempted []Preempted
}

// Preempted is one preemption applied. Requeued is the victim's new
// PENDING attempt, "" when it did not ask for one.
type Preempted struct {
	Victim, Preemptor, Requeued domain.SessionID
	WorkLost                    time.Duration
}

// RejectReason says why a placement was dropped.
type RejectReason string

// Reasons a placement is dropped. The scheduler refreshes its snapshot and
// tries again on all but RejectKernelMismatch, which is a bug in the plan.
const (
	RejectSessionMissing   RejectReason = "session_missing"
	RejectNotPending       RejectReason = "not_pending"
	RejectWrongGroup       RejectReason = "wrong_group"
	RejectKernelMismatch   RejectReason = "kernel_mismatch"
	RejectAgentMissing     RejectReason = "agent_missing"
	RejectAgentUnavailable RejectReason = "agent_unavailable"
	RejectCapacity         RejectReason = "capacity"
	RejectMaxKernels       RejectReason = "max_kernels"
	// RejectDevices: a kernel's device grants no longer hold (a device
	// taken meanwhile, or not the agent's).
	RejectDevices RejectReason = "devices"
)

// Rejection is a placement dropped whole, with the reason and, where there
// is one, the agent and slot that failed.
type Rejection struct {
	Session domain.SessionID
	Reason  RejectReason
	Agent   domain.AgentID
	Slot    string
	Detail  string
}

// FaultHook is for tests only: an engine calls it at the named points
// inside ApplyPlan's transaction (and at FaultDecayRebase inside
// LoadSnapshot's), and an error it returns aborts the transaction there,
// as a crash or a lost connection would. Production code leaves it nil.
type FaultHook func(point string) error

// Fault points inside ApplyPlan, in the order they are reached.
const (
	FaultRead     = "read"     // rows read (and locked)
	FaultSessions = "sessions" // sessions written
	FaultKernels  = "kernels"  // kernels written
	FaultAgents   = "agents"   // agents written
	FaultCommit   = "commit"   // just before commit
)

// FaultDecayRebase is reached inside LoadSnapshot when a fairshare
// group's decayed usage is read whole rather than brought forward from
// the store's cache; tests count it.
const FaultDecayRebase = "decay rebase"

// FaultFeedQuery is reached before Changes queries the feed, and not when
// a store whose engine is the database's sole writer knows the feed has
// not moved past the position asked for; tests count it.
const FaultFeedQuery = "feed query"

// DueSession is a RUNNING session with what its hook needs to decide
// whether it ends: Started is when it became RUNNING (its status change
// time), LastActivity is zero when its owner never used it, IdleTimeout
// is its group's.
type DueSession struct {
	ID            domain.SessionID
	Type          domain.SessionType
	ResourceGroup string
	Started       time.Time
	TimeLimit     time.Duration
	LastActivity  time.Time
	IdleTimeout   time.Duration
}

// Move is one MoveSessions: TransitionSessions' arguments, and the
// history entry to record for each session moved.
type Move struct {
	IDs    []domain.SessionID
	From   []domain.SessionStatus
	To     domain.Transition
	Reason string
	Now    time.Time
	// Note, when set, is recorded as AppendHistory would record an entry
	// with the session, Now, the status it left, To.Session and attempt 1.
	Note *MoveNote
}

// MoveNote is the handler outcome a Move records.
type MoveNote struct {
	Handler domain.HandlerName
	Result  domain.Result
	Message string
}

// Moved is a session MoveSessions moved.
type Moved struct {
	ID        domain.SessionID
	From      domain.SessionStatus
	CreatedAt time.Time
}
