package domain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Identifiers are opaque strings (UUIDs in practice); distinct types keep a
// session id from being passed where an agent id is wanted.
type (
	SessionID string
	KernelID  string
	AgentID   string
)

// Owner is who a session belongs to and whose quotas it counts against. The
// user is Backend.AI's keypair: one access key per user here.
type Owner struct {
	User    string
	Project string
	Domain  string
}

// HeadOfLine is a resource group's policy for a session that does not fit.
type HeadOfLine string

// Head-of-line policies.
const (
	// HOLSkip places what fits and lets later sessions pass one that does not.
	HOLSkip HeadOfLine = "skip"
	// HOLBlock stops the round at the first session that does not fit, so
	// nothing behind it takes the resources it waits for.
	HOLBlock HeadOfLine = "block"
	// HOLReserve reserves slots for the first sessions that do not fit, from
	// the earliest time running sessions' time limits free them (the
	// shadow time), and lets later sessions pass only where they cannot
	// delay that start (backfill). The default for new groups.
	HOLReserve HeadOfLine = "reserve"
)

// DefaultHeadOfLine is what a new resource group gets.
const DefaultHeadOfLine = HOLReserve

// DefaultReservationDepth is how many sessions of a group hold reservations
// at once unless the group says otherwise, after SLURM's bf_max_job_test:
// each one costs the round a sweep over running sessions' ends.
const DefaultReservationDepth = 4

// ParseHeadOfLine checks a head-of-line policy name.
func ParseHeadOfLine(s string) (HeadOfLine, error) {
	switch HeadOfLine(s) {
	case HOLSkip, HOLBlock, HOLReserve:
		return HeadOfLine(s), nil
	}
	return "", fmt.Errorf("unknown head-of-line policy %q (want skip, block or reserve)", s)
}

// Timeouts bound how long a session may stay in each status. Zero means no
// bound.
type Timeouts struct {
	Pending     time.Duration
	Scheduled   time.Duration
	Preparing   time.Duration
	Prepared    time.Duration
	Creating    time.Duration
	Terminating time.Duration
}

// For returns the bound for a session status, zero when there is none.
func (t Timeouts) For(s SessionStatus) time.Duration {
	switch s {
	case SessionPending:
		return t.Pending
	case SessionScheduled:
		return t.Scheduled
	case SessionPreparing:
		return t.Preparing
	case SessionPrepared:
		return t.Prepared
	case SessionCreating:
		return t.Creating
	case SessionTerminating:
		return t.Terminating
	}
	return 0
}

// DefaultTimeouts are the residence bounds a new resource group gets:
// nothing but PENDING waits forever.
func DefaultTimeouts() Timeouts {
	return Timeouts{
		Scheduled:   15 * time.Minute,
		Preparing:   15 * time.Minute,
		Prepared:    10 * time.Minute,
		Creating:    10 * time.Minute,
		Terminating: 5 * time.Minute,
	}
}

// DefaultMaxRetries is how many failed attempts a phase gets (seed 000).
const DefaultMaxRetries = 3

// ResourceGroup is a partition of agents with its own scheduling policy
// (Backend.AI's scaling group).
type ResourceGroup struct {
	Name       string
	State      GroupState
	Sequencer  string // fifo, lifo, drf, fairshare
	Selector   string // concentrated, dispersed, round-robin
	HeadOfLine HeadOfLine
	// ReservationDepth is how many waiting sessions hold reservations at
	// once under HOLReserve (0: none, which makes reserve behave as skip).
	ReservationDepth int
	MaxRetries       int
	Timeouts         Timeouts
	// AllowedTypes lists the session types the group runs; empty means all.
	AllowedTypes []SessionType
	// DefaultSlots is what a kernel gets for each slot its request does not
	// name, so a partial request ({"cpu": "0.5"}) still has a memory limit
	// and is charged against quotas. Nil or zero entries add nothing.
	DefaultSlots Vec
	// MinSlots is the least a kernel may ask for of each slot, after the
	// defaults are filled in. Every group keeps cpu and mem above zero (see
	// FloorSlots): a kernel with neither escapes every limit and quota.
	MinSlots Vec
	// DefaultTimeLimit is the time limit of a session that declares none
	// (0: none); MaxTimeLimit the most a session may declare (0: no cap),
	// as SLURM's partition DefaultTime and MaxTime.
	DefaultTimeLimit time.Duration
	MaxTimeLimit     time.Duration
	// IdleTimeout ends an interactive session its owner has not used for
	// this long (0: off). See the interactive session hook.
	IdleTimeout time.Duration
	// Preemption lets higher priority bands evict lower ones (off by
	// default; see preempt.go).
	Preemption Preemption
	// FairShare is the fairshare sequencer's half-life and shares.
	FairShare FairShare
}

// Allows reports whether the group runs sessions of type t.
func (g ResourceGroup) Allows(t SessionType) bool {
	if len(g.AllowedTypes) == 0 {
		return true
	}
	for _, a := range g.AllowedTypes {
		if a == t {
			return true
		}
	}
	return false
}

// Agent is a node that runs kernels, as the manager knows it.
type Agent struct {
	ID            AgentID
	ResourceGroup string
	Address       string
	// KernelAddress is where its kernels bind and reach each other
	// (agent --kernel-address); empty for an agent of an earlier
	// release, whose Address host stands in.
	KernelAddress string
	Architecture  string
	Runtime       string
	Status        AgentStatus
	Schedulable   bool
	// Capacity is what the agent offers in total; Occupied is what kernels
	// placed on it hold (DESIGN.md invariant 1).
	Capacity Vec
	Occupied Vec
	// MaxKernels caps kernels on the agent; zero means no cap.
	MaxKernels int
	// KernelCount is the number of kernels holding resources on the agent.
	KernelCount   int
	LastHeartbeat time.Time
	// Epoch increases each time the agent registers, fencing reports from an
	// earlier incarnation.
	Epoch  int64
	Images []string
	// AllowsCommand: the agent runs a session's own command instead of its
	// image's. The API refuses a command at submit when no agent of the
	// group would run it, rather than let it fail at start.
	AllowsCommand bool
	// Catalog is every image the agent's runtime can run, as exact names
	// and "prefix*" or "prefix{lo-hi}" patterns (MayRun), for runtimes that cannot fetch others (the
	// process runtime); empty for those that pull from registries and so
	// may run any image (docker).
	Catalog []string
	Labels  map[string]string
	// Devices are the accelerators the agent reported; placement assigns
	// them to kernels one by one. Empty for agents that report counts only.
	Devices []Device
}

// MayRun reports whether the agent could run the image at all: its
// catalog names it or a pattern of it matches, or it has no catalog.
// A pattern is "prefix*", any rest, or "prefix{lo-hi}", a rest that is a
// decimal number from lo to hi with no more digits than hi has (the N of
// exit:N), so a request the runtime would refuse at pull is refused at
// submit instead of being tried again and again.
func (a Agent) MayRun(image string) bool {
	if len(a.Catalog) == 0 {
		return true
	}
	return slices.ContainsFunc(a.Catalog, func(c string) bool { return catalogMatch(c, image) })
}

func catalogMatch(pattern, image string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(image, prefix)
	}
	open := strings.LastIndexByte(pattern, '{')
	if open < 0 || !strings.HasSuffix(pattern, "}") {
		return pattern == image
	}
	rest, ok := strings.CutPrefix(image, pattern[:open])
	if !ok {
		return false
	}
	lo, hi, ok := strings.Cut(pattern[open+1:len(pattern)-1], "-")
	if !ok {
		return pattern == image
	}
	l, errL := strconv.Atoi(lo)
	h, errH := strconv.Atoi(hi)
	if errL != nil || errH != nil || rest == "" || len(rest) > len(hi) || strings.Trim(rest, "0123456789") != "" {
		return false
	}
	n, _ := strconv.Atoi(rest)
	return l <= n && n <= h
}

// Session is a user's request for one or more kernels.
type Session struct {
	ID            SessionID
	Name          string
	Owner         Owner
	Type          SessionType
	Image         string
	Architecture  string
	ResourceGroup string
	ClusterMode   ClusterMode
	ClusterSize   int
	Priority      int
	// Requested is what each kernel asks for.
	Requested       Vec
	Status          SessionStatus
	StatusReason    string
	StatusChangedAt time.Time
	CreatedAt       time.Time
	// StartsAt, when not zero, is the earliest time a batch session may start.
	StartsAt  time.Time
	DependsOn []SessionID
	// DesignatedAgents restricts (Strict) or steers (not Strict) placement.
	DesignatedAgents []AgentID
	DesignatedStrict bool
	// AvoidAgents are agents the session failed on before; placement tries
	// every other agent first.
	AvoidAgents []AgentID
	Outcome     Outcome
	Command     []string
	Env         map[string]string
	// TimeLimit bounds how long the session may run, counted from when it
	// became RUNNING (0: none). Fixed at submission, the group's default
	// filled in.
	TimeLimit time.Duration
	// Job is the job the session is a member of ("" for none), fixed at
	// submission; the scheduler places a job's members as one gang.
	Job JobID
	// Preemptible: a higher priority session may evict it under its
	// group's preemption policy. Fixed at submission (DefaultPreemptible
	// when the session does not say). Requeue: when preempted, a new
	// PENDING attempt of it is submitted.
	Preemptible bool
	Requeue     bool
	// PreemptedBy is the session that preempted it ("" for none).
	PreemptedBy SessionID
	// RequeuedFrom is the preempted attempt this one was requeued from
	// ("" for a session submitted as such): the two ids share nothing, so
	// this is the link.
	RequeuedFrom SessionID
	// Array is the array the session is an element of ("" for none) and
	// ArrayIndex its index there, both fixed at submission.
	Array      ArrayID
	ArrayIndex int
}

// Cluster roles of a session's kernels.
const (
	RoleMain = "main"
	RoleSub  = "sub"
)

// KernelIDOf names the kernel at cluster index idx of session s. Every
// attempt's kernels are named so: a session's at admission, a requeued
// attempt's after its new session.
func KernelIDOf(s SessionID, idx int) KernelID { return KernelID(fmt.Sprintf("%s-k%d", s, idx)) }

// Kernel is one container or process of a session.
type Kernel struct {
	ID              KernelID
	SessionID       SessionID
	ClusterRole     string
	ClusterIdx      int
	Image           string
	Architecture    string
	Requested       Vec
	Agent           AgentID
	Status          KernelStatus
	StatusReason    string
	StatusChangedAt time.Time
	ContainerID     string
	// ExitCode is set once the kernel has exited.
	ExitCode *int
	// ServicePorts are what the kernel serves, as its agent reported when
	// it started; the manager proxies them for the session's owner.
	ServicePorts []ServicePort
	// Devices are the specific devices (or device shares) placement gave
	// the kernel on its agent; the runtime exposes exactly these.
	Devices []DeviceGrant
}

// ServicePort is one port a kernel serves. Host and Port are where its
// agent's runtime bound it, which the manager dials to proxy it.
type ServicePort struct {
	// Name is how users address it (the proxy path, port-forward).
	Name string `json:"name"`
	// Protocol is "http" or "tcp".
	Protocol string `json:"protocol"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
}

// PolicyScope is what a resource policy limits.
type PolicyScope string

// Policy scopes.
const (
	ScopeUser    PolicyScope = "user"
	ScopeProject PolicyScope = "project"
	ScopeDomain  PolicyScope = "domain"
)

// ParsePolicyScope checks a scope name.
func ParsePolicyScope(s string) (PolicyScope, error) {
	switch PolicyScope(s) {
	case ScopeUser, ScopeProject, ScopeDomain:
		return PolicyScope(s), nil
	}
	return "", fmt.Errorf("unknown policy scope %q (want user, project or domain)", s)
}

// Policy limits what a user, project or domain may hold at once.
type Policy struct {
	Scope PolicyScope
	Name  string
	// MaxSlots is the most each slot may total; unlike requests, a slot not
	// limited holds MaxQuantity, so a missing limit means unlimited.
	MaxSlots Vec
	// MaxConcurrentSessions and MaxPendingSessions are zero for no limit.
	MaxConcurrentSessions int
	MaxPendingSessions    int
}

// Unlimited returns a limit vector of n slots that limits nothing.
func Unlimited(n int) Vec {
	v := make(Vec, n)
	for i := range v {
		v[i] = MaxQuantity
	}
	return v
}

// HistoryEntry is one handler outcome for a session.
type HistoryEntry = Record[SessionID, SessionStatus, HandlerName, Result]
