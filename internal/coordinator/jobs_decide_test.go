package coordinator

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/sokovan-go/sokovan/internal/domain"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func member(id string, st domain.SessionStatus, out domain.Outcome, since time.Duration) domain.Session {
	return domain.Session{ID: domain.SessionID(id), Job: "j", Status: st, Outcome: out, StatusChangedAt: t0.Add(-since)}
}

// steps renders a plan's steps for comparison.
func steps(p jobPlan) []string {
	var out []string
	for _, st := range p.Steps {
		switch {
		case st.Move != nil:
			out = append(out, fmt.Sprintf("%s %s→%s", st.Move.Cause, st.Move.From, st.Move.To))
		case len(st.Release) > 0:
			out = append(out, fmt.Sprintf("release %v", st.Release))
		case len(st.End) > 0:
			out = append(out, fmt.Sprintf("end %v", st.End))
		}
	}
	return out
}

// TestDecideJob is decideJob's table: each row of seed 003's job table the
// reconciler raises, and the permit timeout and failure policy's steps.
func TestDecideJob(t *testing.T) {
	b := jobBounds{Starting: time.Minute, Completing: time.Minute, Retention: time.Hour}
	const (
		pend, sched, run  = domain.SessionPending, domain.SessionScheduled, domain.SessionRunning
		term, done, canc  = domain.SessionTerminating, domain.SessionTerminated, domain.SessionCancelled
		ok, fail, dropped = domain.OutcomeSuccess, domain.OutcomeFailure, domain.OutcomeCancelled
	)
	for _, c := range []struct {
		name    string
		state   domain.JobState
		since   time.Duration // in the state
		policy  domain.FailurePolicy
		min     int
		members []domain.Session
		want    []string
		// reserved and waiting are the gauges' counts after the plan.
		reserved, holding int
	}{
		{name: "new, empty: waits", state: domain.JobNew},
		{name: "new, first member: accepted", state: domain.JobNew, members: []domain.Session{member("m1", pend, 0, 0)},
			want: []string{"Run NEW→ACCEPTED"}},
		{name: "new, a member already running: catches up to starting", state: domain.JobNew,
			members: []domain.Session{member("m1", run, 0, 0)}, want: []string{"Run NEW→ACCEPTED", "Run ACCEPTED→STARTING"}, holding: 1},
		{name: "starting, second allocation: running", state: domain.JobStarting,
			members: []domain.Session{member("m1", run, 0, 0), member("m2", sched, 0, 0)}, min: 1,
			want: []string{"Run STARTING→RUNNING"}, reserved: 1, holding: 2},
		{name: "starting, one allocation within the timeout: waits", state: domain.JobStarting, since: 59 * time.Second,
			members: []domain.Session{member("m1", run, 0, 0)}, holding: 1},
		{name: "starting, the timeout passed: running", state: domain.JobStarting, since: time.Minute,
			members: []domain.Session{member("m1", run, 0, 0)}, want: []string{"Run STARTING→RUNNING"}, holding: 1},
		{name: "running, all ended: completing", state: domain.JobRunning,
			members: []domain.Session{member("m1", done, ok, 0), member("m2", canc, dropped, 0)}, want: []string{"Complete RUNNING→COMPLETING"}},
		{name: "accepted, all ended unallocated: completing", state: domain.JobAccepted,
			members: []domain.Session{member("m1", canc, dropped, 0)}, want: []string{"Complete ACCEPTED→COMPLETING"}},
		{name: "completing, a member back: running", state: domain.JobCompleting, members: []domain.Session{member("m1", pend, 0, 0)},
			want: []string{"Run COMPLETING→RUNNING"}},
		{name: "completing, the timeout passed: completed", state: domain.JobCompleting, since: time.Minute,
			members: []domain.Session{member("m1", done, ok, 0)}, want: []string{"Complete COMPLETING→COMPLETED"}},
		{name: "completed, retention passed: expired", state: domain.JobCompleted, since: time.Hour,
			members: []domain.Session{member("m1", done, ok, 0)}, want: []string{"Expire COMPLETED→EXPIRED"}},
		{name: "completed, within retention: stays", state: domain.JobCompleted, since: time.Minute,
			members: []domain.Session{member("m1", done, ok, 0)}},
		{name: "fail policy, a member failed: failing, the rest ended", state: domain.JobRunning, policy: domain.FailureFail,
			members: []domain.Session{member("m1", done, fail, 0), member("m2", run, 0, 0), member("m3", term, 0, 0)},
			want:    []string{"Fail RUNNING→FAILING", "end [m2]"}},
		{name: "wait policy, a member failed: runs on", state: domain.JobRunning, policy: domain.FailureWait,
			members: []domain.Session{member("m1", done, fail, 0), member("m2", run, 0, 0)}, holding: 1},
		{name: "failing, every member ended: failed", state: domain.JobFailing,
			members: []domain.Session{member("m1", done, fail, 0)}, want: []string{"Fail FAILING→FAILED"}},
		{name: "failing, members still ending: waits", state: domain.JobFailing,
			members: []domain.Session{member("m1", term, 0, 0)}},
		{name: "permit within its timeout: reservations kept", state: domain.JobStarting, min: 3, policy: domain.FailureWait,
			members:  []domain.Session{member("m1", sched, 0, 89*time.Second), member("m2", pend, 0, 0)},
			reserved: 1, holding: 1},
		{name: "permit timed out, wait policy: released, the gang waits", state: domain.JobStarting, min: 3, policy: domain.FailureWait,
			members: []domain.Session{member("m1", sched, 0, 90*time.Second), member("m2", sched, 0, time.Second), member("m3", pend, 0, 0)},
			want:    []string{"release [m1 m2]"}},
		{name: "permit timed out, fail policy, nothing real: failing, all ended", state: domain.JobStarting, min: 3,
			policy:  domain.FailureFail,
			members: []domain.Session{member("m1", sched, 0, 90*time.Second), member("m2", pend, 0, 0)},
			want:    []string{"release [m1]", "Fail STARTING→FAILING", "end [m1 m2]"}},
		{name: "gang complete: no permit timeout", state: domain.JobRunning, min: 2,
			members: []domain.Session{member("m1", sched, 0, time.Hour), member("m2", run, 0, time.Hour)}, reserved: 1, holding: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			min := c.min
			if min == 0 {
				min = 1
			}
			policy := c.policy
			if policy == "" {
				policy = domain.FailureWait
			}
			j := domain.Job{ID: "j", State: c.state, StateChangedAt: t0.Add(-c.since), MinAvailable: min,
				PermitTimeout: 90 * time.Second, FailurePolicy: policy, StateReason: "why"}
			p, err := decideJob(j, c.members, t0, b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, steps(p)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if got := len(p.After.scheduled); got != c.reserved {
				t.Errorf("reserved after the plan: %d, want %d", got, c.reserved)
			}
			if p.After.holding != c.holding {
				t.Errorf("holding after the plan: %d, want %d", p.After.holding, c.holding)
			}
		})
	}
}

// TestDecideJobProperties holds decideJob to the rules every plan keeps,
// over random jobs and members: its moves are rows of the table chained
// from the job's state, it never completes a job with a live member,
// releases only reservations whose permit ran out, ends members only of a
// failing job, and neither depends on nor changes anything but its input.
func TestDecideJobProperties(t *testing.T) {
	live := slices.DeleteFunc(domain.JobStates(), domain.JobState.Final)
	statuses := domain.SessionStatuses()
	rapid.Check(t, func(t *rapid.T) {
		j := domain.Job{ID: "j", State: rapid.SampledFrom(live).Draw(t, "state"),
			StateChangedAt: t0.Add(-time.Duration(rapid.IntRange(0, 200).Draw(t, "since")) * time.Second),
			MinAvailable:   rapid.IntRange(1, 4).Draw(t, "min"),
			PermitTimeout:  time.Duration(rapid.IntRange(0, 100).Draw(t, "permit")) * time.Second,
			FailurePolicy:  rapid.SampledFrom([]domain.FailurePolicy{domain.FailureWait, domain.FailureFail}).Draw(t, "policy")}
		b := jobBounds{Starting: time.Duration(rapid.IntRange(0, 200).Draw(t, "starting")) * time.Second,
			Completing: time.Duration(rapid.IntRange(0, 200).Draw(t, "completing")) * time.Second,
			Retention:  time.Duration(rapid.IntRange(0, 200).Draw(t, "retention")) * time.Second}
		n := rapid.IntRange(0, 6).Draw(t, "members")
		members := make([]domain.Session, n)
		for i := range members {
			st := rapid.SampledFrom(statuses).Draw(t, "status")
			out := domain.OutcomeNone
			if st.Terminal() {
				out = rapid.SampledFrom([]domain.Outcome{domain.OutcomeSuccess, domain.OutcomeFailure, domain.OutcomeCancelled}).Draw(t, "outcome")
			}
			members[i] = member(fmt.Sprintf("m%d", i), st, out, time.Duration(rapid.IntRange(0, 200).Draw(t, "age"))*time.Second)
		}
		before := slices.Clone(members)

		p, err := decideJob(j, members, t0, b)
		if err != nil {
			t.Fatalf("a reachable event has no row in the table: %v", err)
		}
		if !cmp.Equal(before, members) {
			t.Fatal("decideJob changed its caller's members")
		}
		again, _ := decideJob(j, members, t0, b)
		if diff := cmp.Diff(steps(p), steps(again)); diff != "" {
			t.Fatalf("two decisions over the same input differ:\n%s", diff)
		}

		in := map[domain.SessionID]domain.Session{}
		for _, m := range members {
			in[m.ID] = m
		}
		state, moves, released := j.State, 0, false
		for i, st := range p.Steps {
			switch {
			case st.Move != nil:
				moves++
				to, err := domain.NextJobState(st.Move.Cause, st.Move.From)
				if st.Move.From != state || err != nil || to != st.Move.To {
					t.Fatalf("step %d: %s %s→%s does not follow from %s by the table (%v)", i, st.Move.Cause, st.Move.From, st.Move.To, state, err)
				}
				if st.Move.Cause == domain.JobComplete && st.Move.From != domain.JobCompleting {
					for _, m := range members {
						if !m.Status.Terminal() || released {
							t.Fatalf("step %d completes the job with member %s %s", i, m.ID, m.Status)
						}
					}
				}
				state = st.Move.To
			case len(st.Release) > 0:
				released = true
				c := countMembers(members)
				if c.holding >= j.MinAvailable {
					t.Fatalf("released %v although the gang holds %d of %d", st.Release, c.holding, j.MinAvailable)
				}
				for _, id := range st.Release {
					if in[id].Status != domain.SessionScheduled {
						t.Fatalf("released %s, which is %s", id, in[id].Status)
					}
				}
				if oldest := slices.MinFunc(c.scheduled, func(a, b domain.Session) int {
					return a.StatusChangedAt.Compare(b.StatusChangedAt)
				}); t0.Sub(oldest.StatusChangedAt) < j.PermitTimeout {
					t.Fatalf("released before the permit timeout: oldest waited %s of %s", t0.Sub(oldest.StatusChangedAt), j.PermitTimeout)
				}
			case len(st.End) > 0:
				if state != domain.JobFailing || i != len(p.Steps)-1 {
					t.Fatalf("step %d ends members of a %s job, or is not the last step", i, state)
				}
				for _, id := range st.End {
					if m := in[id]; m.Status.Terminal() || m.Status == domain.SessionTerminating {
						t.Fatalf("ends %s, which is %s", id, m.Status)
					}
				}
			default:
				t.Fatalf("step %d is empty", i)
			}
			if state.Final() && i != len(p.Steps)-1 {
				t.Fatalf("steps go on after the final %s: %s", state, strings.Join(steps(p), ", "))
			}
		}
		if moves > maxJobMoves {
			t.Fatalf("%d moves in one pass", moves)
		}
	})
}
