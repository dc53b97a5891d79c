package coordinator

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	// ago is a status-changed time d before now (t0).
	ago := func(d time.Duration) time.Time { return t0.Add(-d) }
	to := func(s domain.SessionStatus, k domain.KernelStatus) *domain.Transition {
		return &domain.Transition{Session: s, Kernel: k}
	}
	schedule := lifecycle(domain.HandlerScheduleNewSessions).Transitions
	prepare := lifecycle(domain.HandlerPrepareSessions).Transitions
	start := lifecycle(domain.HandlerStartSessions).Transitions
	terminate := lifecycle(domain.HandlerTerminateSessions).Transitions
	untilBound := handlerPolicy{retryUntilExpiry: true}
	// noExpiry is PrepareSessions' row without an EXPIRED transition.
	noExpiry := prepare
	noExpiry.Expired = nil
	// noGiveUp is PrepareSessions' row without a GIVE_UP transition.
	noGiveUp := prepare
	noGiveUp.GiveUp = nil

	tests := []struct {
		name string
		in   facts
		want decision
	}{
		{
			// SCHEDULED is not PREPARING, so the session and its kernels move.
			name: "success moves to the success target",
			in: facts{Report: succeeded, Transitions: prepare, Status: domain.SessionScheduled,
				StatusChangedAt: ago(time.Minute), Now: t0, Bound: 15 * time.Minute},
			want: decision{Result: domain.ResultSuccess, To: to(domain.SessionPreparing, domain.KernelPreparing)},
		},
		{
			// 20m > 15m, but a success has just moved the session on.
			name: "success past the bound still succeeds",
			in: facts{Report: succeeded, Transitions: prepare, Status: domain.SessionScheduled,
				StatusChangedAt: ago(20 * time.Minute), Now: t0, Bound: 15 * time.Minute},
			want: decision{Result: domain.ResultSuccess, To: to(domain.SessionPreparing, domain.KernelPreparing)},
		},
		{
			// PREPARING == PREPARING: only kernels move, and the residence
			// clock keeps running, so apply still holds it to the bound.
			name: "success already in the target status moves kernels in place",
			in: facts{Report: succeeded, Transitions: prepare, Status: domain.SessionPreparing,
				StatusChangedAt: ago(20 * time.Minute), Now: t0, Bound: 15 * time.Minute},
			want: decision{Result: domain.ResultSuccess, To: &domain.Transition{Kernel: domain.KernelPreparing}, InPlace: true},
		},
		{
			// Kernel target 0: nothing to move, the session stays.
			name: "success in place with no kernel target moves nothing",
			in: facts{Report: succeeded, Transitions: domain.Transitions{Success: to(domain.SessionPreparing, 0)},
				Status: domain.SessionPreparing, Now: t0},
			want: decision{Result: domain.ResultSuccess, InPlace: true},
		},
		{
			// Status 0: apply does not know the session, so it cannot stay.
			name: "success of an untargeted session moves",
			in:   facts{Report: succeeded, Transitions: domain.Transitions{Success: to(0, domain.KernelPreparing)}, Now: t0},
			want: decision{Result: domain.ResultSuccess, To: to(0, domain.KernelPreparing)},
		},
		{
			// The plan applier moved it; the decision only names the target.
			name: "success the handler applied is never in place",
			in: facts{Report: succeeded, Transitions: schedule, Applied: true, Status: domain.SessionPending,
				StatusChangedAt: ago(time.Hour), Now: t0},
			want: decision{Result: domain.ResultSuccess, To: to(domain.SessionScheduled, domain.KernelScheduled)},
		},
		{
			// No success transition: history only.
			name: "success without a success transition is history only",
			in:   facts{Report: succeeded, Status: domain.SessionPreparing, Now: t0},
			want: decision{Result: domain.ResultSuccess},
		},
		{
			// 2 tries < 3 max_retries, 5m <= 15m.
			name: "failure below max_retries needs a retry",
			in: facts{Report: failed, Message: "pull failed", Transitions: prepare, Status: domain.SessionPreparing,
				StatusChangedAt: ago(5 * time.Minute), Now: t0, Bound: 15 * time.Minute, Tries: 2, MaxRetries: 3},
			want: decision{Result: domain.ResultNeedRetry, Message: "attempt 2 of 3 failed: pull failed"},
		},
		{
			// 3 tries == 3 max_retries: the give-up sends it back to PENDING.
			name: "failure reaching max_retries gives up",
			in: facts{Report: failed, Message: "pull failed", Transitions: prepare, Status: domain.SessionPreparing,
				StatusChangedAt: ago(5 * time.Minute), Now: t0, Bound: 15 * time.Minute, Tries: 3, MaxRetries: 3},
			want: decision{Result: domain.ResultGiveUp, To: to(domain.SessionPending, domain.KernelPending),
				Message: "gave up after 3 failed attempts: pull failed"},
		},
		{
			// 5 tries > 3 (max_retries lowered meanwhile): still gives up.
			name: "failure beyond max_retries gives up",
			in: facts{Report: failed, Message: "create failed", Transitions: start, Status: domain.SessionPrepared,
				StatusChangedAt: ago(time.Minute), Now: t0, Bound: 10 * time.Minute, Tries: 5, MaxRetries: 3},
			want: decision{Result: domain.ResultGiveUp, To: to(domain.SessionPending, domain.KernelPending),
				Message: "gave up after 5 failed attempts: create failed"},
		},
		{
			// 1 try < 3, but retrying cannot help: cancelled at once.
			name: "impossible failure cancels on the first attempt",
			in: facts{Report: failed, Message: "invalid kernel spec", Transitions: start, Status: domain.SessionPrepared,
				StatusChangedAt: ago(time.Minute), Now: t0, Bound: 10 * time.Minute, Tries: 1, MaxRetries: 3, Impossible: true},
			want: decision{Result: domain.ResultGiveUp, To: to(domain.SessionCancelled, domain.KernelCancelled),
				Message: "cannot start, retrying cannot help: invalid kernel spec"},
		},
		{
			// 11m > 10m: the refusal says more than the expiry would.
			name: "impossible failure past the bound cancels rather than expires",
			in: facts{Report: failed, Message: "invalid kernel spec", Transitions: start, Status: domain.SessionCreating,
				StatusChangedAt: ago(11 * time.Minute), Now: t0, Bound: 10 * time.Minute, Tries: 1, MaxRetries: 3, Impossible: true},
			want: decision{Result: domain.ResultGiveUp, To: to(domain.SessionCancelled, domain.KernelCancelled),
				Message: "cannot start, retrying cannot help: invalid kernel spec"},
		},
		{
			// 3 == 3, but the row has no GIVE_UP transition to take.
			name: "failure at max_retries without a give-up transition retries",
			in: facts{Report: failed, Message: "pull failed", Transitions: noGiveUp, Status: domain.SessionPreparing,
				StatusChangedAt: ago(time.Minute), Now: t0, Bound: 15 * time.Minute, Tries: 3, MaxRetries: 3},
			want: decision{Result: domain.ResultNeedRetry, Message: "attempt 3 of 3 failed: pull failed"},
		},
		{
			// 16m > 15m with 1 try < 3: the bound wins and the message
			// names what kept failing.
			name: "failure past the bound expires naming the failure",
			in: facts{Report: failed, Message: "pull failed", Transitions: prepare, Status: domain.SessionPreparing,
				StatusChangedAt: ago(16 * time.Minute), Now: t0, Bound: 15 * time.Minute, Tries: 1, MaxRetries: 3},
			want: decision{Result: domain.ResultExpired, To: to(domain.SessionPending, domain.KernelPending),
				Message: "PREPARING for longer than 15m0s; last attempt failed: pull failed"},
		},
		{
			// 16m > 15m and 3 == 3: the bound is checked first.
			name: "failure past the bound at max_retries expires rather than gives up",
			in: facts{Report: failed, Message: "pull failed", Transitions: prepare, Status: domain.SessionPreparing,
				StatusChangedAt: ago(16 * time.Minute), Now: t0, Bound: 15 * time.Minute, Tries: 3, MaxRetries: 3},
			want: decision{Result: domain.ResultExpired, To: to(domain.SessionPending, domain.KernelPending),
				Message: "PREPARING for longer than 15m0s; last attempt failed: pull failed"},
		},
		{
			// 15m == 15m is not longer than the bound.
			name: "failure exactly at the bound needs a retry",
			in: facts{Report: failed, Message: "pull failed", Transitions: prepare, Status: domain.SessionPreparing,
				StatusChangedAt: ago(15 * time.Minute), Now: t0, Bound: 15 * time.Minute, Tries: 1, MaxRetries: 3},
			want: decision{Result: domain.ResultNeedRetry, Message: "attempt 1 of 3 failed: pull failed"},
		},
		{
			// Bound 0 is unbounded: a day in the status is fine.
			name: "failure in an unbounded status needs a retry",
			in: facts{Report: failed, Message: "pull failed", Transitions: prepare, Status: domain.SessionPreparing,
				StatusChangedAt: ago(24 * time.Hour), Now: t0, Tries: 1, MaxRetries: 3},
			want: decision{Result: domain.ResultNeedRetry, Message: "attempt 1 of 3 failed: pull failed"},
		},
		{
			// 16m > 15m, but the row cannot expire; 3 == 3 gives up.
			name: "failure past the bound without an expiry transition gives up",
			in: facts{Report: failed, Message: "pull failed", Transitions: noExpiry, Status: domain.SessionPreparing,
				StatusChangedAt: ago(16 * time.Minute), Now: t0, Bound: 15 * time.Minute, Tries: 3, MaxRetries: 3},
			want: decision{Result: domain.ResultGiveUp, To: to(domain.SessionPending, domain.KernelPending),
				Message: "gave up after 3 failed attempts: pull failed"},
		},
		{
			// 100 tries >= 3, yet TerminateSessions only retries: giving up
			// would release slots of kernels that may still run. 4m <= 5m.
			name: "TerminateSessions failure never gives up",
			in: facts{Report: failed, Message: "destroy k1 on a1: timeout", Transitions: terminate, Policy: untilBound,
				Status: domain.SessionTerminating, StatusChangedAt: ago(4 * time.Minute), Now: t0,
				Bound: 5 * time.Minute, Tries: 100, MaxRetries: 3},
			want: decision{Result: domain.ResultNeedRetry,
				Message: "attempt 100 failed, retrying until the TERMINATING bound: destroy k1 on a1: timeout"},
		},
		{
			// 6m > 5m: the bound forces the end.
			name: "TerminateSessions failure past the bound expires",
			in: facts{Report: failed, Message: "destroy k1 on a1: timeout", Transitions: terminate, Policy: untilBound,
				Status: domain.SessionTerminating, StatusChangedAt: ago(6 * time.Minute), Now: t0,
				Bound: 5 * time.Minute, Tries: 100, MaxRetries: 3},
			want: decision{Result: domain.ResultExpired, To: to(domain.SessionTerminated, domain.KernelTerminated),
				Message: "TERMINATING for longer than 5m0s; last attempt failed: destroy k1 on a1: timeout"},
		},
		{
			// 1m <= 10m: only history changes.
			name: "skipped is history only",
			in: facts{Report: skipped, Message: "not enough cpu", Transitions: schedule, Status: domain.SessionPending,
				StatusChangedAt: ago(time.Minute), Now: t0, Bound: 10 * time.Minute},
			want: decision{Result: domain.ResultSkipped, Message: "not enough cpu"},
		},
		{
			// 11m > 10m: the wait has lasted too long; the skip's reason
			// is not the expiry's.
			name: "skipped past the bound expires",
			in: facts{Report: skipped, Message: "not enough cpu", Transitions: schedule, Status: domain.SessionPending,
				StatusChangedAt: ago(11 * time.Minute), Now: t0, Bound: 10 * time.Minute},
			want: decision{Result: domain.ResultExpired, To: to(domain.SessionCancelled, domain.KernelCancelled),
				Message: "PENDING for longer than 10m0s"},
		},
		{
			// 9m <= 10m: nothing to do, nothing to record.
			name: "unreported within the bound is left alone",
			in: facts{Transitions: start, Status: domain.SessionCreating,
				StatusChangedAt: ago(9 * time.Minute), Now: t0, Bound: 10 * time.Minute},
			want: decision{},
		},
		{
			// 11m > 10m: a lost kernel_started cannot hold CREATING forever.
			name: "unreported past the bound expires",
			in: facts{Transitions: start, Status: domain.SessionCreating,
				StatusChangedAt: ago(11 * time.Minute), Now: t0, Bound: 10 * time.Minute},
			want: decision{Result: domain.ResultExpired, To: to(domain.SessionPending, domain.KernelPending),
				Message: "CREATING for longer than 10m0s"},
		},
		{
			// 16m > 15m, but the row has no EXPIRED transition.
			name: "unreported past the bound without an expiry transition is left alone",
			in: facts{Transitions: noExpiry, Status: domain.SessionPreparing,
				StatusChangedAt: ago(16 * time.Minute), Now: t0, Bound: 15 * time.Minute},
			want: decision{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := decide(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decide() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideDoesNotShareTheTable checks that a decision's move is its own:
// changing it must not change the handler's row the next decision reads.
func TestDecideDoesNotShareTheTable(t *testing.T) {
	t.Parallel()
	tr := lifecycle(domain.HandlerPrepareSessions).Transitions
	d := decide(facts{Report: succeeded, Transitions: tr, Status: domain.SessionScheduled})
	d.To.Session = domain.SessionError
	if got, want := tr.Success.Session, domain.SessionPreparing; got != want {
		t.Errorf("table success target = %v after changing a decision, want %v", got, want)
	}
}
