package kernelstate_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/sokovan-go/sokovan/internal/domain"
	ks "github.com/sokovan-go/sokovan/internal/kernelstate"
)

func kernel(st domain.KernelStatus) domain.Kernel {
	return domain.Kernel{ID: "k1", SessionID: "s1", Agent: "a1", Image: "sleep", Status: st}
}

func code(n int) *int { return &n }

func TestApply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		from  domain.KernelStatus
		epoch int64
		ev    domain.KernelEvent
		want  domain.KernelStatus // 0: no change expected
	}{
		{"pull started", domain.KernelPreparing, 1, domain.KernelEvent{Kind: domain.EventImagePullStarted, Agent: "a1", Epoch: 1, Image: "sleep"}, domain.KernelPulling},
		{"pull finished from pulling", domain.KernelPulling, 1, domain.KernelEvent{Kind: domain.EventImagePullFinished, Agent: "a1", Epoch: 1, Image: "sleep"}, domain.KernelPrepared},
		{"pull finished with the image cached", domain.KernelPreparing, 1, domain.KernelEvent{Kind: domain.EventImagePullFinished, Agent: "a1", Epoch: 1, Image: "sleep"}, domain.KernelPrepared},
		{"late pull started after finished", domain.KernelPrepared, 1, domain.KernelEvent{Kind: domain.EventImagePullStarted, Agent: "a1", Epoch: 1, Image: "sleep"}, 0},
		{"other image", domain.KernelPreparing, 1, domain.KernelEvent{Kind: domain.EventImagePullFinished, Agent: "a1", Epoch: 1, Image: "other"}, 0},
		{"other agent", domain.KernelPreparing, 1, domain.KernelEvent{Kind: domain.EventImagePullFinished, Agent: "a2", Epoch: 1, Image: "sleep"}, 0},
		{"stale epoch", domain.KernelPreparing, 2, domain.KernelEvent{Kind: domain.EventImagePullFinished, Agent: "a1", Epoch: 1, Image: "sleep"}, 0},
		{"newer epoch is fine", domain.KernelPreparing, 2, domain.KernelEvent{Kind: domain.EventImagePullFinished, Agent: "a1", Epoch: 3, Image: "sleep"}, domain.KernelPrepared},
		{"creating", domain.KernelPrepared, 0, domain.KernelEvent{Kind: domain.EventKernelCreating, Agent: "a1", Kernel: "k1"}, domain.KernelCreating},
		{"started", domain.KernelCreating, 0, domain.KernelEvent{Kind: domain.EventKernelStarted, Agent: "a1", Kernel: "k1"}, domain.KernelRunning},
		{"started before creating was committed", domain.KernelPrepared, 0, domain.KernelEvent{Kind: domain.EventKernelStarted, Agent: "a1", Kernel: "k1"}, domain.KernelRunning},
		{"started for another kernel", domain.KernelCreating, 0, domain.KernelEvent{Kind: domain.EventKernelStarted, Agent: "a1", Kernel: "k2"}, 0},
		{"creating after running", domain.KernelRunning, 0, domain.KernelEvent{Kind: domain.EventKernelCreating, Agent: "a1", Kernel: "k1"}, 0},
		{"exited", domain.KernelRunning, 0, domain.KernelEvent{Kind: domain.EventKernelTerminated, Agent: "a1", Kernel: "k1", ExitCode: code(3)}, domain.KernelTerminated},
		{"exited while terminating", domain.KernelTerminating, 0, domain.KernelEvent{Kind: domain.EventKernelTerminated, Agent: "a1", Kernel: "k1", ExitCode: code(0)}, domain.KernelTerminated},
		{"died without exit code", domain.KernelCreating, 0, domain.KernelEvent{Kind: domain.EventKernelTerminated, Agent: "a1", Kernel: "k1", Message: "create failed"}, domain.KernelError},
		{"terminated twice", domain.KernelTerminated, 0, domain.KernelEvent{Kind: domain.EventKernelTerminated, Agent: "a1", Kernel: "k1", ExitCode: code(0)}, 0},
		{"started after terminated", domain.KernelTerminated, 0, domain.KernelEvent{Kind: domain.EventKernelStarted, Agent: "a1", Kernel: "k1"}, 0},
		{"cancelled before running", domain.KernelPrepared, 0, domain.KernelEvent{Kind: domain.EventKernelCancelled, Agent: "a1", Kernel: "k1"}, domain.KernelCancelled},
		{"cancelled after running is ignored", domain.KernelRunning, 0, domain.KernelEvent{Kind: domain.EventKernelCancelled, Agent: "a1", Kernel: "k1"}, 0},
		{"event for a kernel back in PENDING (rescheduled)", domain.KernelPending, 0, domain.KernelEvent{Kind: domain.EventKernelStarted, Agent: "a1", Kernel: "k1"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ok := ks.Apply(kernel(tc.from), tc.epoch, tc.ev)
			if tc.want == 0 {
				if ok {
					t.Fatalf("applied %+v, want no change", c)
				}
				return
			}
			if !ok || c.To != tc.want {
				t.Fatalf("got %v (applied %v), want %v", c.To, ok, tc.want)
			}
		})
	}
}

func TestExitCodeAndContainerAreKept(t *testing.T) {
	t.Parallel()
	k := kernel(domain.KernelCreating)
	c, _ := ks.Apply(k, 0, domain.KernelEvent{Kind: domain.EventKernelStarted, Agent: "a1", Kernel: "k1", ContainerID: "c-1"})
	k = c.On(k)
	c, _ = ks.Apply(k, 0, domain.KernelEvent{Kind: domain.EventKernelTerminated, Agent: "a1", Kernel: "k1", ExitCode: code(3), Message: "exited"})
	k = c.On(k)
	if k.Status != domain.KernelTerminated || k.ExitCode == nil || *k.ExitCode != 3 || k.ContainerID != "c-1" || k.StatusReason != "exited" {
		t.Fatalf("kernel after exit: %+v", k)
	}
}

func TestPullFailureKeepsStatusAndIsNotRepeated(t *testing.T) {
	t.Parallel()
	k := kernel(domain.KernelPulling)
	ev := domain.KernelEvent{Kind: domain.EventImagePullFailed, Agent: "a1", Image: "sleep", Message: "not found"}
	c, ok := ks.Apply(k, 0, ev)
	if !ok || c.To != 0 || c.Reason != "image pull failed: not found" {
		t.Fatalf("first failure: %+v applied=%v", c, ok)
	}
	if _, ok := ks.Apply(c.On(k), 0, ev); ok {
		t.Fatal("the same failure applied twice")
	}
}

// TestEventsAreSafeToRepeatAndReorder drives a kernel with random events —
// duplicates, stale epochs, other agents' and other kernels' events, in any
// order — and checks the engine's promises after every step.
func TestEventsAreSafeToRepeatAndReorder(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		k := kernel(rapid.SampledFrom(domain.KernelStatuses()).Draw(t, "start"))
		epoch := int64(rapid.IntRange(0, 2).Draw(t, "epoch"))
		for range rapid.IntRange(1, 30).Draw(t, "steps") {
			ev := domain.KernelEvent{
				Kind:    rapid.SampledFrom(domain.EventKinds()).Draw(t, "kind"),
				Agent:   domain.AgentID(rapid.SampledFrom([]string{"a1", "a1", "a1", "a2"}).Draw(t, "agent")),
				Epoch:   int64(rapid.IntRange(0, 3).Draw(t, "evEpoch")),
				Kernel:  domain.KernelID(rapid.SampledFrom([]string{"k1", "k1", "k2"}).Draw(t, "kernel")),
				Image:   rapid.SampledFrom([]string{"sleep", "sleep", "other"}).Draw(t, "image"),
				Message: rapid.SampledFrom([]string{"", "x"}).Draw(t, "reason"),
			}
			if rapid.Bool().Draw(t, "hasCode") {
				ev.ExitCode = code(rapid.IntRange(0, 3).Draw(t, "code"))
			}
			c, ok := ks.Apply(k, epoch, ev)
			if !ok {
				continue
			}
			if ev.Epoch < epoch || ev.Agent != k.Agent {
				t.Fatalf("applied a stale or foreign event %+v to %+v", ev, k)
			}
			if c.To != 0 && !domain.KernelTransitionLegal(k.Status, c.To) {
				t.Fatalf("illegal %v -> %v from %+v", k.Status, c.To, ev)
			}
			next := c.On(k)
			if _, again := ks.Apply(next, epoch, ev); again {
				t.Fatalf("event %+v applied twice (state %+v)", ev, next)
			}
			k = next
		}
	})
}
