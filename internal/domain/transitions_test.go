package domain

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// allNonTerminalKernel and allTerminalKernel are written out, not derived
// from Terminal(), so that the tables are checked against seed 001 rather
// than against the code under test.
var (
	allNonTerminalKernel = []KernelStatus{
		KernelPending, KernelScheduled, KernelPreparing, KernelPulling,
		KernelPrepared, KernelCreating, KernelRunning, KernelTerminating,
	}
	allTerminalKernel = []KernelStatus{KernelTerminated, KernelCancelled, KernelError}
)

func TestLifecycleHandlersMatchSeed(t *testing.T) {
	// Seed 001, "Handler | Current | SUCCESS | NEED_RETRY | EXPIRED |
	// GIVE_UP" and the StatusTransitions listings. need_retry is nil in
	// every row: a retry keeps the status and is only recorded.
	want := []LifecycleHandler{
		{
			Name:          HandlerScheduleNewSessions,
			TargetSession: []SessionStatus{SessionPending},
			TargetKernel:  []KernelStatus{KernelPending},
			Transitions: Transitions{
				Success: &Transition{Session: SessionScheduled, Kernel: KernelScheduled},
				Expired: &Transition{Session: SessionCancelled, Kernel: KernelCancelled},
				GiveUp:  &Transition{Session: SessionCancelled, Kernel: KernelCancelled},
			},
		},
		{
			Name:          HandlerPrepareSessions,
			TargetSession: []SessionStatus{SessionScheduled, SessionPreparing},
			// The seed's target table lists only SCHEDULED kernels, yet the
			// session targets include PREPARING; kernels still PREPARING
			// (pull asked for, not yet begun) are included so such a
			// session is retried and can expire. PULLING is included so a
			// lost image_pull_finished is recovered by asking again; success
			// leaves those kernels PULLING (KernelTargetApplies).
			TargetKernel: []KernelStatus{KernelScheduled, KernelPreparing, KernelPulling},
			Transitions: Transitions{
				Success: &Transition{Session: SessionPreparing, Kernel: KernelPreparing},
				Expired: &Transition{Session: SessionPending, Kernel: KernelPending},
				GiveUp:  &Transition{Session: SessionPending, Kernel: KernelPending},
			},
		},
		{
			Name: HandlerStartSessions,
			// The seed's table lists PREPARED only, but its diagram expires
			// CREATING to PENDING; watching CREATING is what makes that
			// bound enforceable.
			TargetSession: []SessionStatus{SessionPrepared, SessionCreating},
			TargetKernel:  []KernelStatus{KernelPrepared},
			Transitions: Transitions{
				Success: &Transition{Session: SessionCreating, Kernel: KernelCreating},
				Expired: &Transition{Session: SessionPending, Kernel: KernelPending},
				GiveUp:  &Transition{Session: SessionPending, Kernel: KernelPending},
			},
		},
		{
			Name:          HandlerTerminateSessions,
			TargetSession: []SessionStatus{SessionTerminating},
			TargetKernel:  allNonTerminalKernel,
			Transitions: Transitions{
				Success: &Transition{Session: SessionTerminated, Kernel: KernelTerminated},
				Expired: &Transition{Session: SessionTerminated, Kernel: KernelTerminated},
				GiveUp:  &Transition{Session: SessionTerminated, Kernel: KernelTerminated},
			},
		},
	}
	got := LifecycleHandlers()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LifecycleHandlers() mismatch (-want +got):\n%s", diff)
	}
	for _, h := range got {
		if h.Transitions.NeedRetry != nil {
			t.Errorf("%s: NeedRetry = %+v, want nil (maintain status)", h.Name, *h.Transitions.NeedRetry)
		}
	}
}

func TestPromotionHandlersMatchSeed(t *testing.T) {
	// Seed 001, "Handler | target Session | check_kernel_statuses |
	// match_type | success Session". PromoteToTerminated checks every
	// non-terminal kernel status including TERMINATING: promoting while a
	// kernel is still stopping would leave it behind the session
	// (DESIGN.md invariant 2) and release its slots early.
	want := []PromotionHandler{
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
			CheckKernel: []KernelStatus{
				KernelPending, KernelScheduled, KernelPreparing, KernelPulling, KernelPrepared, KernelCreating,
			},
			Match:   MatchNotAny,
			Success: SessionRunning,
		},
		{
			Name:          HandlerPromoteToTerminated,
			TargetSession: []SessionStatus{SessionTerminating},
			CheckKernel:   allNonTerminalKernel,
			Match:         MatchNotAny,
			Success:       SessionTerminated,
		},
		{
			Name:          HandlerDetectTermination,
			TargetSession: []SessionStatus{SessionRunning},
			CheckKernel:   allTerminalKernel,
			Match:         MatchAny,
			Success:       SessionTerminating,
			Judge:         true, // beyond the seed: see TestMultiKernelOutcome
		},
	}
	if diff := cmp.Diff(want, PromotionHandlers()); diff != "" {
		t.Errorf("PromotionHandlers() mismatch (-want +got):\n%s", diff)
	}
}

func TestNonTerminalAndTerminalListsAgreeWithTerminal(t *testing.T) {
	for _, s := range KernelStatuses() {
		if got, want := slices.Contains(allTerminalKernel, s), s.Terminal(); got != want {
			t.Errorf("%v: in terminal list = %v, Terminal() = %v", s, got, want)
		}
		if got, want := slices.Contains(allNonTerminalKernel, s), !s.Terminal(); got != want {
			t.Errorf("%v: in non-terminal list = %v, !Terminal() = %v", s, got, want)
		}
	}
}

func TestHandlerTablesAreFreshCopies(t *testing.T) {
	// Callers may sort or trim what they get; that must not leak into the
	// next caller's view of the table.
	// If the tables are shared after all, the changes are undone on exit so
	// this test's failure does not cascade into the others.
	l := LifecycleHandlers()
	p := PromotionHandlers()
	defer func(ts SessionStatus, succ SessionStatus, tk, c0, c2 KernelStatus) {
		l[0].TargetSession[0], l[0].Transitions.Success.Session = ts, succ
		l[3].TargetKernel[0], p[0].CheckKernel[0], p[2].CheckKernel[0] = tk, c0, c2
	}(l[0].TargetSession[0], l[0].Transitions.Success.Session, l[3].TargetKernel[0], p[0].CheckKernel[0], p[2].CheckKernel[0])
	l[0].TargetSession[0] = SessionError
	l[0].Transitions.Success.Session = SessionError
	l[3].TargetKernel[0] = KernelError
	p[0].CheckKernel[0] = KernelError
	p[2].CheckKernel[0] = KernelError

	l2, p2 := LifecycleHandlers(), PromotionHandlers()
	if l2[0].TargetSession[0] != SessionPending || l2[0].Transitions.Success.Session != SessionScheduled {
		t.Errorf("changing a returned lifecycle handler changed the table: %+v", l2[0])
	}
	if l2[3].TargetKernel[0] != KernelPending {
		t.Errorf("changing TerminateSessions.TargetKernel changed the table: %v", l2[3].TargetKernel)
	}
	if p2[0].CheckKernel[0] != KernelPending || p2[2].CheckKernel[0] != KernelPending {
		t.Errorf("changing returned promotion handlers changed the table: %v, %v", p2[0].CheckKernel, p2[2].CheckKernel)
	}
}

// History tells movers apart by name, so a name outside the tables must
// not repeat one inside them.
func TestHandlerNamesAreDistinct(t *testing.T) {
	names := []HandlerName{HandlerUserCancel, HandlerUserTerminate, HandlerAgentLost, HandlerEndDue}
	for _, h := range LifecycleHandlers() {
		names = append(names, h.Name)
	}
	for _, h := range PromotionHandlers() {
		names = append(names, h.Name)
	}
	seen := map[HandlerName]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("handler name %q used twice", n)
		}
		seen[n] = true
	}
}

func TestTransitionsFor(t *testing.T) {
	tr := Transitions{
		Success:   &Transition{Session: SessionScheduled, Kernel: KernelScheduled},
		NeedRetry: &Transition{Session: SessionPending},
		Expired:   &Transition{Session: SessionCancelled, Kernel: KernelCancelled},
		GiveUp:    &Transition{Session: SessionError, Kernel: KernelError},
	}
	tests := []struct {
		r    Result
		want *Transition
	}{
		{ResultSuccess, tr.Success},
		{ResultNeedRetry, tr.NeedRetry},
		{ResultExpired, tr.Expired},
		{ResultGiveUp, tr.GiveUp},
		{ResultSkipped, nil},
		{Result("BOGUS"), nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.r), func(t *testing.T) {
			if got := tr.For(tt.r); got != tt.want {
				t.Errorf("For(%s) = %+v, want %+v", tt.r, got, tt.want)
			}
		})
	}
}

func TestMatchHolds(t *testing.T) {
	checked := allTerminalKernel
	tests := []struct {
		name    string
		m       Match
		kernels []KernelStatus
		checked []KernelStatus
		want    bool
	}{
		// A session with no kernels: ALL and NOT_ANY hold vacuously, ANY
		// never does, as seed 001's SQL forms behave.
		{name: "ALL no kernels", m: MatchAll, kernels: nil, checked: checked, want: true},
		{name: "ANY no kernels", m: MatchAny, kernels: nil, checked: checked, want: false},
		{name: "NOT_ANY no kernels", m: MatchNotAny, kernels: []KernelStatus{}, checked: checked, want: true},

		{name: "ALL every kernel checked", m: MatchAll, kernels: []KernelStatus{KernelTerminated, KernelError}, checked: checked, want: true},
		{name: "ALL one kernel unchecked", m: MatchAll, kernels: []KernelStatus{KernelTerminated, KernelRunning}, checked: checked, want: false},
		{name: "ALL none checked", m: MatchAll, kernels: []KernelStatus{KernelRunning}, checked: checked, want: false},

		{name: "ANY one kernel checked", m: MatchAny, kernels: []KernelStatus{KernelRunning, KernelError}, checked: checked, want: true},
		{name: "ANY every kernel checked", m: MatchAny, kernels: []KernelStatus{KernelCancelled}, checked: checked, want: true},
		{name: "ANY none checked", m: MatchAny, kernels: []KernelStatus{KernelRunning, KernelRunning}, checked: checked, want: false},

		{name: "NOT_ANY none checked", m: MatchNotAny, kernels: []KernelStatus{KernelRunning, KernelCreating}, checked: checked, want: true},
		{name: "NOT_ANY last kernel checked", m: MatchNotAny, kernels: []KernelStatus{KernelRunning, KernelTerminated}, checked: checked, want: false},
		{name: "NOT_ANY every kernel checked", m: MatchNotAny, kernels: []KernelStatus{KernelError}, checked: checked, want: false},

		{name: "ALL empty check set", m: MatchAll, kernels: []KernelStatus{KernelRunning}, checked: nil, want: false},
		{name: "ANY empty check set", m: MatchAny, kernels: []KernelStatus{KernelRunning}, checked: nil, want: false},
		{name: "NOT_ANY empty check set", m: MatchNotAny, kernels: []KernelStatus{KernelRunning}, checked: nil, want: true},

		// An unset match must never promote a session.
		{name: "invalid match no kernels", m: 0, kernels: nil, checked: checked, want: false},
		{name: "invalid match", m: MatchNotAny + 1, kernels: []KernelStatus{KernelRunning}, checked: checked, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.Holds(tt.kernels, tt.checked); got != tt.want {
				t.Errorf("%v.Holds(%v, %v) = %v, want %v", tt.m, tt.kernels, tt.checked, got, tt.want)
			}
		})
	}
}

func TestMatchString(t *testing.T) {
	for m, want := range map[Match]string{MatchAll: "ALL", MatchAny: "ANY", MatchNotAny: "NOT_ANY", 0: "Match(?)"} {
		if got := m.String(); got != want {
			t.Errorf("Match(%d).String() = %q, want %q", uint8(m), got, want)
		}
	}
}

func TestPromotionMatchesOnSessionsKernels(t *testing.T) {
	// The promotion rows applied to concrete kernel sets, so a wrong match
	// type or check list shows up as a wrong decision, not only as a table
	// diff.
	byName := map[HandlerName]PromotionHandler{}
	for _, h := range PromotionHandlers() {
		byName[h.Name] = h
	}
	tests := []struct {
		name    string
		handler HandlerName
		kernels []KernelStatus
		want    bool
	}{
		{name: "prepared once all kernels prepared", handler: HandlerPromoteToPrepared, kernels: []KernelStatus{KernelPrepared, KernelPrepared}, want: true},
		{name: "not prepared while one pulls", handler: HandlerPromoteToPrepared, kernels: []KernelStatus{KernelPrepared, KernelPulling}, want: false},
		{name: "running once all run", handler: HandlerPromoteToRunning, kernels: []KernelStatus{KernelRunning, KernelRunning}, want: true},
		{name: "not running while one creates", handler: HandlerPromoteToRunning, kernels: []KernelStatus{KernelRunning, KernelCreating}, want: false},
		{name: "terminated once all ended", handler: HandlerPromoteToTerminated, kernels: []KernelStatus{KernelTerminated, KernelError}, want: true},
		{name: "not terminated while one stops", handler: HandlerPromoteToTerminated, kernels: []KernelStatus{KernelTerminated, KernelTerminating}, want: false},
		{name: "termination detected when one ended", handler: HandlerDetectTermination, kernels: []KernelStatus{KernelRunning, KernelTerminated}, want: true},
		{name: "no termination while all run", handler: HandlerDetectTermination, kernels: []KernelStatus{KernelRunning, KernelRunning}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ok := byName[tt.handler]
			if !ok {
				t.Fatalf("no promotion handler %s", tt.handler)
			}
			if got := h.Match.Holds(tt.kernels, h.CheckKernel); got != tt.want {
				t.Errorf("%s on %v = %v, want %v", tt.handler, tt.kernels, got, tt.want)
			}
		})
	}
}

func TestKernelNothingLeavesTerminal(t *testing.T) {
	for _, from := range KernelStatuses() {
		if !from.Terminal() {
			continue
		}
		for _, to := range KernelStatuses() {
			if KernelTransitionLegal(from, to) {
				t.Errorf("KernelTransitionLegal(%v, %v) = true, want false: %v is terminal", from, to, from)
			}
		}
	}
}

func TestKernelNoSelfTransition(t *testing.T) {
	for _, s := range KernelStatuses() {
		if KernelTransitionLegal(s, s) {
			t.Errorf("KernelTransitionLegal(%v, %v) = true, want false: a repeat is a duplicate event", s, s)
		}
	}
}

func TestKernelInvalidStatusesHaveNoEdges(t *testing.T) {
	for _, s := range KernelStatuses() {
		for _, bad := range []KernelStatus{0, KernelError + 1} {
			if KernelTransitionLegal(bad, s) || KernelTransitionLegal(s, bad) {
				t.Errorf("an edge between %v and invalid %v is legal", s, bad)
			}
		}
	}
}

// kernelNormalPath is the order a kernel that runs to completion passes
// through (DESIGN.md, seed 001).
var kernelNormalPath = []KernelStatus{
	KernelPending, KernelScheduled, KernelPreparing, KernelPulling, KernelPrepared,
	KernelCreating, KernelRunning, KernelTerminating, KernelTerminated,
}

// reachable returns the statuses reachable from start over legal edges,
// start included, found by trying every pair rather than by reading the
// edge list, so it does not trust KernelTransitions.
func reachable(start KernelStatus) map[KernelStatus]bool {
	seen := map[KernelStatus]bool{start: true}
	queue := []KernelStatus{start}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, next := range KernelStatuses() {
			if !seen[next] && KernelTransitionLegal(cur, next) {
				seen[next] = true
				queue = append(queue, next)
			}
		}
	}
	return seen
}

func TestKernelNormalPathReachable(t *testing.T) {
	seen := reachable(KernelPending)
	for _, s := range kernelNormalPath {
		if !seen[s] {
			t.Errorf("%v is not reachable from PENDING over legal edges", s)
		}
	}
}

func TestKernelNormalPathStepsLegal(t *testing.T) {
	// Stronger than reachability: each step of the normal path is a single
	// event, so each must be its own legal edge.
	for i := 1; i < len(kernelNormalPath); i++ {
		from, to := kernelNormalPath[i-1], kernelNormalPath[i]
		if !KernelTransitionLegal(from, to) {
			t.Errorf("KernelTransitionLegal(%v, %v) = false, want true (normal path)", from, to)
		}
	}
}

func TestKernelTransitionsListsExactlyTheLegalEdges(t *testing.T) {
	// The renderer and other consumers read KernelTransitions; it must list
	// every legal edge once and nothing else.
	var want [][2]KernelStatus
	for _, from := range KernelStatuses() {
		for _, to := range KernelStatuses() {
			if KernelTransitionLegal(from, to) {
				want = append(want, [2]KernelStatus{from, to})
			}
		}
	}
	got := KernelTransitions()
	sortEdges := func(e [][2]KernelStatus) [][2]KernelStatus {
		e = slices.Clone(e)
		slices.SortFunc(e, func(a, b [2]KernelStatus) int {
			if a[0] != b[0] {
				return int(a[0]) - int(b[0])
			}
			return int(a[1]) - int(b[1])
		})
		return e
	}
	if diff := cmp.Diff(want, sortEdges(got)); diff != "" {
		t.Errorf("KernelTransitions() mismatch (-want +got):\n%s", diff)
	}
	for i := 1; i < len(got); i++ {
		if got[i-1][0] > got[i][0] {
			t.Errorf("KernelTransitions() not in source status order at %d: %v after %v", i, got[i], got[i-1])
		}
	}
}

func TestLifecycleKernelTargetsAreLegal(t *testing.T) {
	// The coordinator applies a handler's kernel target only along legal
	// edges (KernelTargetApplies). For expired and give_up the session
	// leaves its status, so every targeted kernel must be able to follow
	// (DESIGN.md invariant 2). Success may leave a kernel alone only when
	// it is already further along than the target, never behind it.
	for _, h := range LifecycleHandlers() {
		for _, r := range []Result{ResultSuccess, ResultNeedRetry, ResultExpired, ResultGiveUp} {
			tr := h.Transitions.For(r)
			if tr == nil || tr.Kernel == 0 {
				continue
			}
			for _, from := range h.TargetKernel {
				if from == tr.Kernel || KernelTargetApplies(from, tr.Kernel) {
					continue
				}
				if r == ResultSuccess && from > tr.Kernel && !from.Terminal() {
					continue
				}
				t.Errorf("%s %s cannot move kernels %v -> %v", h.Name, r, from, tr.Kernel)
			}
		}
	}
}

func TestKernelTargetApplies(t *testing.T) {
	tests := []struct {
		from, to KernelStatus
		want     bool
	}{
		{KernelScheduled, KernelPreparing, true},
		{KernelPulling, KernelPreparing, false}, // already further along
		{KernelPreparing, KernelPreparing, false},
		{KernelTerminated, KernelPending, false},
		{KernelPrepared, 0, false},
	}
	for _, tc := range tests {
		if got := KernelTargetApplies(tc.from, tc.to); got != tc.want {
			t.Errorf("KernelTargetApplies(%v, %v) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestLifecycleReleasesMatchResourceHolding(t *testing.T) {
	// DESIGN.md invariant 1: every move back to PENDING or to a terminal
	// status must leave kernels in a status that holds nothing, or the
	// released slots would still be counted.
	for _, h := range LifecycleHandlers() {
		for _, r := range []Result{ResultSuccess, ResultNeedRetry, ResultExpired, ResultGiveUp} {
			tr := h.Transitions.For(r)
			if tr == nil || tr.Session == 0 {
				continue
			}
			if tr.Session.HoldsResources() != tr.Kernel.HoldsResources() {
				t.Errorf("%s %s: session %v holds resources = %v but kernel %v = %v",
					h.Name, r, tr.Session, tr.Session.HoldsResources(), tr.Kernel, tr.Kernel.HoldsResources())
			}
		}
	}
}

func TestKernelRandomWalkCanAlwaysTerminate(t *testing.T) {
	// Whatever sequence of legal events an agent reports, a kernel must
	// never reach a status from which no terminal status can be reached:
	// such a kernel would hold its slots for ever.
	terminalFrom := map[KernelStatus]bool{}
	for _, s := range KernelStatuses() {
		for r := range reachable(s) {
			if r.Terminal() {
				terminalFrom[s] = true
				break
			}
		}
	}
	successors := map[KernelStatus][]KernelStatus{}
	for _, e := range KernelTransitions() {
		successors[e[0]] = append(successors[e[0]], e[1])
	}
	rapid.Check(t, func(t *rapid.T) {
		cur := KernelPending
		path := []KernelStatus{cur}
		steps := rapid.IntRange(0, 40).Draw(t, "steps")
		for range steps {
			if !terminalFrom[cur] {
				t.Fatalf("walk %v reached %v, from which no terminal status is reachable", path, cur)
			}
			next := successors[cur]
			if len(next) == 0 {
				if !cur.Terminal() {
					t.Fatalf("walk %v is stuck at non-terminal %v", path, cur)
				}
				return
			}
			to := rapid.SampledFrom(next).Draw(t, "next")
			if !KernelTransitionLegal(cur, to) {
				t.Fatalf("KernelTransitions lists %v -> %v but KernelTransitionLegal rejects it", cur, to)
			}
			cur = to
			path = append(path, cur)
		}
		if !cur.Terminal() && !terminalFrom[cur] {
			t.Fatalf("walk %v ended at %v, from which no terminal status is reachable", path, cur)
		}
	})
}
