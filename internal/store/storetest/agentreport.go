package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// testAgentCapacity: a heartbeat's capacity replaces the stored one when it
// differs, from the current epoch only; what is occupied stays, even when
// the new capacity is below it.
func testAgentCapacity(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g1")
	f.agent("a1", "g1", []string{"cpu", "8", "mem", "16g"})
	s := f.session("s1", "g1", "alice", 1, []string{"cpu", "6"})
	f.schedule("g1", s, "a1")

	changed, err := f.s.SetAgentCapacity(f.ctx, "a1", 1, f.slots("cpu", "8", "mem", "16g"))
	f.must(err, "same capacity")
	if changed {
		t.Error("the same capacity reported as a change")
	}
	changed, err = f.s.SetAgentCapacity(f.ctx, "a1", 1, f.slots("cpu", "4", "mem", "16g"))
	f.must(err, "shrink")
	if !changed {
		t.Error("a new capacity reported as no change")
	}
	got := f.getAgent("a1")
	if diff := cmp.Diff(f.slots("cpu", "4", "mem", "16g"), got.Capacity); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	// Shrunk below what is occupied: nothing is evicted.
	f.wantHeld("a1", f.slots("cpu", "6"), 1)
	// Nothing fits there now: a placement of the smallest request is
	// refused rather than over-committing further.
	more := f.session("s2", "g1", "alice", 1, []string{"cpu", "1"})
	if res := f.apply("g1", placement(more, "a1")); len(res.Applied) != 0 {
		t.Errorf("placed on an agent whose capacity is below what it holds: %+v", res)
	}
	// The store's invariants hold once the capacity is back above what
	// is held (a shrink below it is the one over-commitment allowed).
	_, err = f.s.SetAgentCapacity(f.ctx, "a1", 1, f.slots("cpu", "8", "mem", "16g"))
	f.must(err, "grow back")
	_, err = f.s.SetAgentCapacity(f.ctx, "a1", 2, f.slots("cpu", "1"))
	wantErr(t, err, store.ErrGuardFailed, "capacity from another epoch")
	_, err = f.s.SetAgentCapacity(f.ctx, "ghost", 1, f.slots("cpu", "1"))
	wantErr(t, err, store.ErrNotFound, "capacity of unknown agent")
	_, err = f.s.SetAgentCapacity(f.ctx, "a1", 1, make(domain.Vec, f.reg.Len()+1))
	wantErr(t, err, store.ErrInvalid, "capacity vector longer than the registry")
	f.invariant()
}

// testNoteWaitingKernels: an agent's note on why a CREATING kernel waits
// becomes its status reason, once per change; kernels in other statuses
// or on other agents keep theirs.
func testNoteWaitingKernels(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g1")
	f.agent("a1", "g1", []string{"cpu", "8"})
	f.agent("a2", "g1", []string{"cpu", "8"})
	creating := f.session("s1", "g1", "alice", 1, []string{"cpu", "1"})
	f.schedule("g1", creating, "a1")
	f.advance("s1", domain.SessionCreating)
	other := f.session("s2", "g1", "alice", 1, []string{"cpu", "1"})
	f.schedule("g1", other, "a1")
	k1, k2 := creating.Kernels[0].ID, other.Kernels[0].ID

	n, err := f.s.NoteWaitingKernels(f.ctx, "a1", map[domain.KernelID]string{k1: "queued in SLURM: Resources", k2: "queued in SLURM: Priority"})
	f.must(err, "note")
	if n != 1 {
		t.Errorf("%d rows changed, want 1 (only the CREATING kernel)", n)
	}
	if got := f.get("s1").Kernels[0].StatusReason; got != "queued in SLURM: Resources" {
		t.Errorf("status reason %q, want the note", got)
	}
	if got := f.get("s2").Kernels[0].StatusReason; got != "" {
		t.Errorf("a SCHEDULED kernel got status reason %q", got)
	}
	n, err = f.s.NoteWaitingKernels(f.ctx, "a1", map[domain.KernelID]string{k1: "queued in SLURM: Resources"})
	f.must(err, "same note")
	if n != 0 {
		t.Errorf("the same note changed %d rows, want 0", n)
	}
	n, err = f.s.NoteWaitingKernels(f.ctx, "a2", map[domain.KernelID]string{k1: "suspended in SLURM"})
	f.must(err, "note from another agent")
	if n != 0 || f.get("s1").Kernels[0].StatusReason != "queued in SLURM: Resources" {
		t.Errorf("another agent's note changed %d rows", n)
	}
	_, err = f.s.TransitionSessions(f.ctx, []domain.SessionID{"s1"}, []domain.SessionStatus{domain.SessionCreating},
		domain.Transition{Session: domain.SessionRunning, Kernel: domain.KernelRunning}, "", at(30))
	f.must(err, "start s1")
	if got := f.get("s1").Kernels[0].StatusReason; got == "queued in SLURM: Resources" {
		t.Errorf("the note outlived the kernel's start")
	}
	f.invariant()
}
