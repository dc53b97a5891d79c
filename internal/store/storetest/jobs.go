package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

func testJobs(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("default")
	f.agent("a1", "default", []string{"cpu=8"})
	job := domain.Job{ID: "j1", Name: "spark", Owner: domain.Owner{User: "alice", Project: "p", Domain: "d"},
		MinAvailable: 2, PermitTimeout: 90 * time.Second, FailurePolicy: domain.FailureFail, State: domain.JobNew,
		StateChangedAt: at(0), CreatedAt: at(0)}
	f.must(f.s.CreateJob(f.ctx, job), "create job")
	other := job
	other.ID, other.Owner.User, other.State = "j2", "bob", domain.JobRejected
	f.must(f.s.CreateJob(f.ctx, other), "create job 2")
	if err := f.s.CreateJob(f.ctx, job); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate job: %v; want ErrConflict", err)
	}
	got, err := f.s.GetJob(f.ctx, "j1")
	f.must(err, "get job")
	if diff := cmp.Diff(job, got); diff != "" {
		t.Fatalf("job round trip (-want +got):\n%s", diff)
	}
	if _, err := f.s.GetJob(f.ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing job: %v", err)
	}
	for _, c := range []struct {
		f    store.JobFilter
		want []domain.JobID
	}{{store.JobFilter{}, []domain.JobID{"j1", "j2"}}, {store.JobFilter{User: "alice"}, []domain.JobID{"j1"}},
		{store.JobFilter{Live: true}, []domain.JobID{"j1"}}} {
		list, err := f.s.ListJobs(f.ctx, c.f)
		f.must(err, "list jobs")
		if diff := cmp.Diff(c.want, idsOf(list, func(j domain.Job) domain.JobID { return j.ID })); diff != "" {
			t.Errorf("ListJobs(%+v) (-want +got):\n%s", c.f, diff)
		}
	}

	// Members join through the session's Job; a missing job is refused.
	m1 := f.session("m1", "default", "alice", 1, []string{"cpu=1"}, func(s *domain.Session) { s.Job = "j1" })
	f.session("m2", "default", "alice", 1, []string{"cpu=1"}, func(s *domain.Session) { s.Job = "j1" })
	f.session("solo", "default", "alice", 1, []string{"cpu=1"})
	if m1.Session.Job != "j1" {
		t.Fatalf("member's job %q, want j1", m1.Session.Job)
	}
	s, k := f.build("ghost", "default", "alice", 1, []string{"cpu=1"}, func(s *domain.Session) { s.Job = "nope" })
	if err := f.s.CreateSession(f.ctx, s, k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("member of a missing job: %v; want ErrNotFound", err)
	}
	members, err := f.s.JobMembers(f.ctx, "j1")
	f.must(err, "members")
	if len(members) != 2 || members[0].ID != "m1" || members[1].ID != "m2" {
		t.Fatalf("members: %+v", members)
	}
	// The snapshot carries the gang facts of the group's jobs.
	f.schedule("default", m1, "a1")
	snap, err := f.s.LoadSnapshot(f.ctx, "default", at(5))
	f.must(err, "snapshot")
	if diff := cmp.Diff(map[domain.JobID]int{"j1": 2}, map[domain.JobID]int{"j1": snap.Jobs["j1"].Live}); diff != "" {
		t.Errorf("live members (-want +got):\n%s", diff)
	}
	if j := snap.Jobs["j1"]; j.MinAvailable != 2 || j.Placed != 1 || len(snap.Jobs) != 1 {
		t.Errorf("snapshot jobs: %+v", snap.Jobs)
	}

	// Moves are guarded on the state they start from and recorded.
	move := domain.JobHistoryEntry{Subject: "j1", At: at(7), Cause: domain.JobRun, From: domain.JobNew, To: domain.JobAccepted, Message: "first member added"}
	f.must(f.s.MoveJob(f.ctx, move), "move job")
	if err := f.s.MoveJob(f.ctx, move); !errors.Is(err, store.ErrGuardFailed) {
		t.Fatalf("stale move: %v; want ErrGuardFailed", err)
	}
	missing := move
	missing.Subject = "nope"
	if err := f.s.MoveJob(f.ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("move of a missing job: %v; want ErrNotFound", err)
	}
	got, err = f.s.GetJob(f.ctx, "j1")
	f.must(err, "get job")
	if got.State != domain.JobAccepted || !got.StateChangedAt.Equal(at(7)) || got.StateReason != "first member added" {
		t.Fatalf("after the move: %+v", got)
	}
	hist, err := f.s.JobHistory(f.ctx, "j1")
	f.must(err, "history")
	if diff := cmp.Diff([]domain.JobHistoryEntry{move}, hist); diff != "" {
		t.Fatalf("history (-want +got):\n%s", diff)
	}
	// LiveJobs reads the live jobs with their members in one go: j2 is
	// REJECTED, so neither it nor its member shows.
	f.session("m3", "default", "bob", 1, []string{"cpu=1"}, func(s *domain.Session) { s.Job = "j2" })
	live, err := f.s.LiveJobs(f.ctx)
	f.must(err, "live jobs")
	var seen []string
	for _, jm := range live {
		for _, m := range jm.Members {
			seen = append(seen, string(jm.Job.ID)+"/"+string(m.ID))
		}
	}
	if diff := cmp.Diff([]string{"j1/m1", "j1/m2"}, seen); diff != "" || len(live) != 1 || live[0].Job.ID != "j1" || live[0].Job.State != domain.JobAccepted {
		t.Fatalf("LiveJobs: %d jobs, members (-want +got):\n%s", len(live), diff)
	}

}
