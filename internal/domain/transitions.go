package domain

// Transition is where one outcome moves a session and its kernels. A zero
// field means "leave that entity's status as it is". A kernel target applies
// only to kernels for which the move is legal (KernelTargetApplies); the
// others keep their status. So when PrepareSessions re-asks an agent for a
// session whose kernels are already PULLING, they stay PULLING.
type Transition struct {
	Session SessionStatus
	Kernel  KernelStatus
	// Fail fixes the outcome the sessions will end with at failure,
	// whatever their kernels' exit codes: the coordinator ended them (a
	// time limit, idleness), and kernels killed for it may still exit 0.
	Fail bool
	// Judge fixes the outcome from the kernels that have ended by the
	// move, unless one is already fixed: success when each of them
	// TERMINATED with exit code 0, failure otherwise. The kernels still
	// live are then destroyed because the session is ending, so how they
	// end does not count.
	Judge bool
}

// Transitions holds a lifecycle handler's targets per outcome. A nil entry
// means the outcome changes no status and is only recorded in history.
type Transitions struct {
	Success   *Transition
	NeedRetry *Transition
	Expired   *Transition
	GiveUp    *Transition
}

// For returns the transition for a handler result, nil for SKIPPED or a
// result that changes nothing.
func (t Transitions) For(r Result) *Transition {
	switch r {
	case ResultSuccess:
		return t.Success
	case ResultNeedRetry:
		return t.NeedRetry
	case ResultExpired:
		return t.Expired
	case ResultGiveUp:
		return t.GiveUp
	}
	return nil
}

// HandlerName identifies a coordinator handler.
type HandlerName string

// Lifecycle and promotion handler names, as history records them.
const (
	HandlerScheduleNewSessions HandlerName = "ScheduleNewSessions"
	HandlerPrepareSessions     HandlerName = "PrepareSessions"
	HandlerStartSessions       HandlerName = "StartSessions"
	HandlerTerminateSessions   HandlerName = "TerminateSessions"
	HandlerPromoteToPrepared   HandlerName = "PromoteToPrepared"
	HandlerPromoteToRunning    HandlerName = "PromoteToRunning"
	HandlerPromoteToTerminated HandlerName = "PromoteToTerminated"
	HandlerDetectTermination   HandlerName = "DetectTermination"
)

// Names of moves made outside the tables, so that history can still say
// who moved a session: a user's cancel or termination, and the sweep
// requeueing sessions whose agent was lost, and the sweep ending sessions
// their type's hook says are done (time limit, idle timeout).
const (
	HandlerUserCancel    HandlerName = "UserCancel"
	HandlerUserTerminate HandlerName = "UserTerminate"
	HandlerAgentLost     HandlerName = "AgentLost"
	HandlerEndDue        HandlerName = "EndDueSessions"
)

// LifecycleHandler is one row of seed 001's lifecycle table: which sessions
// the handler works on and where each outcome sends them.
type LifecycleHandler struct {
	Name HandlerName
	// TargetSession are the session statuses the handler is run on.
	TargetSession []SessionStatus
	// TargetKernel filters sessions to those having a kernel in one of these
	// statuses; nil means no kernel filter.
	TargetKernel []KernelStatus
	Transitions  Transitions
}

// Match is how a promotion handler judges a session's kernels.
type Match uint8

// Match types of seed 001.
const (
	// MatchAll holds when every kernel is in one of the checked statuses.
	MatchAll Match = iota + 1
	// MatchAny holds when at least one kernel is.
	MatchAny
	// MatchNotAny holds when no kernel is.
	MatchNotAny
)

func (m Match) String() string {
	switch m {
	case MatchAll:
		return "ALL"
	case MatchAny:
		return "ANY"
	case MatchNotAny:
		return "NOT_ANY"
	}
	return "Match(?)"
}

// Holds reports whether the kernel statuses satisfy the match against the
// checked set. A session with no kernels satisfies ALL and NOT_ANY
// vacuously and never ANY, as the SQL forms in seed 001 do.
func (m Match) Holds(kernels []KernelStatus, checked []KernelStatus) bool {
	in := func(s KernelStatus) bool {
		for _, c := range checked {
			if c == s {
				return true
			}
		}
		return false
	}
	switch m {
	case MatchAll:
		for _, k := range kernels {
			if !in(k) {
				return false
			}
		}
		return true
	case MatchAny:
		for _, k := range kernels {
			if in(k) {
				return true
			}
		}
		return false
	case MatchNotAny:
		for _, k := range kernels {
			if in(k) {
				return false
			}
		}
		return true
	}
	return false
}

// PromotionHandler is one row of seed 001's promotion table: it moves a
// session forward when its kernels meet the match, and never changes the
// kernels themselves.
type PromotionHandler struct {
	Name          HandlerName
	TargetSession []SessionStatus
	CheckKernel   []KernelStatus
	Match         Match
	Success       SessionStatus
	// Judge fixes the sessions' outcome as they move (Transition.Judge).
	Judge bool
}

func to(s SessionStatus, k KernelStatus) *Transition { return &Transition{Session: s, Kernel: k} }

// nonTerminalKernel is PENDING through TERMINATING. It builds a new slice
// on each call because the tables are handed to callers, who may change
// them; a shared slice would let one caller corrupt every later table.
func nonTerminalKernel() []KernelStatus {
	return []KernelStatus{
		KernelPending, KernelScheduled, KernelPreparing, KernelPulling, KernelPrepared,
		KernelCreating, KernelRunning, KernelTerminating,
	}
}

// LifecycleHandlers returns seed 001's lifecycle table. It returns a fresh
// copy so callers cannot change the shared table.
func LifecycleHandlers() []LifecycleHandler {
	return []LifecycleHandler{
		{
			Name:          HandlerScheduleNewSessions,
			TargetSession: []SessionStatus{SessionPending},
			TargetKernel:  []KernelStatus{KernelPending},
			Transitions: Transitions{
				Success: to(SessionScheduled, KernelScheduled),
				Expired: to(SessionCancelled, KernelCancelled),
				GiveUp:  to(SessionCancelled, KernelCancelled),
			},
		},
		{
			Name:          HandlerPrepareSessions,
			TargetSession: []SessionStatus{SessionScheduled, SessionPreparing},
			// PULLING too: if the agent's image_pull_finished was lost, the
			// only way forward is to ask it again. Success leaves PULLING
			// kernels where they are (PULLING → PREPARING is not legal).
			TargetKernel: []KernelStatus{KernelScheduled, KernelPreparing, KernelPulling},
			Transitions: Transitions{
				Success: to(SessionPreparing, KernelPreparing),
				Expired: to(SessionPending, KernelPending),
				GiveUp:  to(SessionPending, KernelPending),
			},
		},
		{
			Name: HandlerStartSessions,
			// CREATING too, as PrepareSessions covers PREPARING: the seed's
			// diagram expires CREATING back to PENDING, which needs a
			// handler watching it (lost kernel_started events).
			TargetSession: []SessionStatus{SessionPrepared, SessionCreating},
			TargetKernel:  []KernelStatus{KernelPrepared},
			Transitions: Transitions{
				Success: to(SessionCreating, KernelCreating),
				Expired: to(SessionPending, KernelPending),
				GiveUp:  to(SessionPending, KernelPending),
			},
		},
		{
			Name:          HandlerTerminateSessions,
			TargetSession: []SessionStatus{SessionTerminating},
			TargetKernel:  nonTerminalKernel(),
			Transitions: Transitions{
				Success: to(SessionTerminated, KernelTerminated),
				Expired: to(SessionTerminated, KernelTerminated),
				GiveUp:  to(SessionTerminated, KernelTerminated),
			},
		},
	}
}

// PromotionHandlers returns seed 001's promotion table as a fresh copy.
func PromotionHandlers() []PromotionHandler {
	return []PromotionHandler{
		{
			Name:          HandlerPromoteToPrepared,
			TargetSession: []SessionStatus{SessionScheduled, SessionPreparing},
			CheckKernel:   []KernelStatus{KernelPending, KernelScheduled, KernelPreparing, KernelPulling},
			Match:         MatchNotAny,
			Success:       SessionPrepared,
		},
		{
			Name:          HandlerPromoteToRunning,
			TargetSession: []SessionStatus{SessionCreating},
			CheckKernel: []KernelStatus{KernelPending, KernelScheduled, KernelPreparing, KernelPulling,
				KernelPrepared, KernelCreating},
			Match:   MatchNotAny,
			Success: SessionRunning,
		},
		{
			Name:          HandlerPromoteToTerminated,
			TargetSession: []SessionStatus{SessionTerminating},
			CheckKernel:   nonTerminalKernel(),
			Match:         MatchNotAny,
			Success:       SessionTerminated,
		},
		{
			Name:          HandlerDetectTermination,
			TargetSession: []SessionStatus{SessionRunning},
			CheckKernel:   []KernelStatus{KernelTerminated, KernelCancelled, KernelError},
			Match:         MatchAny,
			Success:       SessionTerminating,
			// The kernels that ended while the session ran ended on
			// their own; the others are about to be destroyed.
			Judge: true,
		},
	}
}

// kernelEdges lists every legal kernel status change. Everything not listed
// is illegal; in particular nothing leaves a terminal status, and no event
// can move a kernel backwards along the normal path except the coordinator's
// re-scheduling to PENDING.
var kernelEdges = map[KernelStatus][]KernelStatus{
	// TERMINATED because TerminateSessions ends every non-terminal kernel of
	// a terminating session, including one never scheduled.
	KernelPending: {KernelScheduled, KernelTerminated, KernelCancelled, KernelError},
	KernelScheduled: {KernelPreparing, KernelPulling, KernelPrepared, KernelPending,
		KernelTerminating, KernelTerminated, KernelCancelled, KernelError},
	KernelPreparing: {KernelPulling, KernelPrepared, KernelPending, KernelTerminating,
		KernelTerminated, KernelCancelled, KernelError},
	KernelPulling: {KernelPrepared, KernelPending, KernelTerminating, KernelTerminated,
		KernelCancelled, KernelError},
	// PREPARED → RUNNING: an agent's kernel_started can arrive before the
	// coordinator has committed CREATING for the create call it answered.
	KernelPrepared: {KernelCreating, KernelRunning, KernelPending, KernelTerminating,
		KernelTerminated, KernelCancelled, KernelError},
	KernelCreating: {KernelRunning, KernelPending, KernelTerminating, KernelTerminated,
		KernelCancelled, KernelError},
	// RUNNING → PENDING: re-scheduling a multi-node session whose other
	// kernels never started; the coordinator destroys this one first.
	KernelRunning:     {KernelPending, KernelTerminating, KernelTerminated, KernelError},
	KernelTerminating: {KernelTerminated, KernelError},
}

// KernelTransitionLegal reports whether a kernel may move from one status to
// another. Staying in the same status is not a transition and is not legal:
// callers treat it as a duplicate to ignore.
func KernelTransitionLegal(from, to KernelStatus) bool {
	for _, s := range kernelEdges[from] {
		if s == to {
			return true
		}
	}
	return false
}

// KernelTargetApplies reports whether a handler's kernel target moves a
// kernel now in from: it must be a legal edge. A kernel already there is
// left alone too.
func KernelTargetApplies(from, to KernelStatus) bool {
	return to != 0 && from != to && KernelTransitionLegal(from, to)
}

// KernelTransitions returns every legal kernel edge, in status order, for
// rendering and tests.
func KernelTransitions() [][2]KernelStatus {
	var out [][2]KernelStatus
	for _, from := range KernelStatuses() {
		for _, to := range kernelEdges[from] {
			out = append(out, [2]KernelStatus{from, to})
		}
	}
	return out
}
