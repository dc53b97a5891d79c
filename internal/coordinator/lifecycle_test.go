package coordinator_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// forEngine runs a test on SQLite and PostgreSQL.
func forEngine(t *testing.T, fn func(t *testing.T, engine string)) {
	for _, e := range engines {
		t.Run(e, func(t *testing.T) {
			t.Parallel()
			fn(t, e)
		})
	}
}

func TestSessionRunsAndTerminates(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		id := h.submit("sleep", "2", 1, domain.SingleNode)
		h.until(id, domain.SessionRunning)
		h.wantHistory(id, "ScheduleNewSessions:SUCCESS", "PrepareSessions:SUCCESS", "PromoteToPrepared:SUCCESS",
			"StartSessions:SUCCESS", "PromoteToRunning:SUCCESS")
		if k := h.session(id).Kernels[0]; k.Status != domain.KernelRunning || k.ContainerID == "" {
			t.Fatalf("kernel %+v, want RUNNING with a container", k)
		}
		if _, err := h.c.Terminate(h.ctx, id, "user asked", false); err != nil {
			t.Fatal(err)
		}
		h.wantStatus(id, domain.SessionTerminating)
		h.until(id, domain.SessionTerminated)
		if len(h.agents.running()) != 0 {
			t.Fatalf("kernels still run on agents: %v", h.agents.running())
		}
	})
}

// The scheduler and the handlers' listings read sessions without their
// command and environment; every kernel created still gets them.
func TestKernelsStartWithTheSessionsCommandAndEnv(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		command := []string{"python", "-c", "print(1)"}
		env := map[string]string{"MODEL": "resnet", "BIG": strings.Repeat("v", 32<<10)}
		id := h.submitWith(func(s *domain.Session) { s.Command, s.Env = command, env }, "sleep", "6", 2, domain.MultiNode)
		plain := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(id, domain.SessionRunning)
		h.until(plain, domain.SessionRunning)
		for _, k := range append(h.session(id).Kernels, h.session(plain).Kernels...) {
			got, ok := h.agents.specs[k.ID]
			wantCommand, wantEnv := command, env
			if k.SessionID == plain {
				wantCommand, wantEnv = nil, nil
			}
			if !ok || !slices.Equal(got.Command, wantCommand) || !maps.Equal(got.Env, wantEnv) {
				t.Errorf("kernel %s created with command %q and %d environment variables, want %q and %d",
					k.ID, got.Command, len(got.Env), wantCommand, len(wantEnv))
			}
		}
	})
}

func TestKernelExitEndsSession(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		ok := h.submit("exit:0", "1", 1, domain.SingleNode)
		bad := h.submit("exit:3", "1", 2, domain.MultiNode)
		h.until(ok, domain.SessionRunning)
		h.until(bad, domain.SessionRunning)
		h.agents.exitKernels()
		h.until(ok, domain.SessionTerminated)
		h.until(bad, domain.SessionTerminated)
		if o := h.session(ok).Session.Outcome; o != domain.OutcomeSuccess {
			t.Fatalf("exit:0 outcome %v, want success", o)
		}
		s := h.session(bad)
		if s.Session.Outcome != domain.OutcomeFailure || s.Kernels[0].ExitCode == nil || *s.Kernels[0].ExitCode != 3 {
			t.Fatalf("exit:3 session %+v kernels %+v, want failure with exit code 3", s.Session, s.Kernels)
		}
		h.wantHistory(bad, "DetectTermination:SUCCESS", "PromoteToTerminated:SUCCESS")
	})
}

// TestMultiKernelOutcome: a session ends when one of its kernels does,
// and the kernels still running are destroyed for it. Its outcome is
// judged from the kernels that ended on their own: success when each of
// them exited 0, whichever ended first, so a destroyed sibling does not
// make it a failure; a user's termination still ends in failure.
func TestMultiKernelOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// exits are the kernels (by cluster index) that end on their
		// own, with their codes, before the session is seen to end.
		exits     map[int]int
		terminate bool
		want      domain.Outcome
	}{
		{"main exits 0, the other is destroyed", map[int]int{0: 0}, false, domain.OutcomeSuccess},
		{"the other exits 0, main is destroyed", map[int]int{1: 0}, false, domain.OutcomeSuccess},
		{"both exit 0", map[int]int{0: 0, 1: 0}, false, domain.OutcomeSuccess},
		{"main exits 1, the other is destroyed", map[int]int{0: 1}, false, domain.OutcomeFailure},
		{"main exits 0, the other 2", map[int]int{0: 0, 1: 2}, false, domain.OutcomeFailure},
		{"a user terminates it", nil, true, domain.OutcomeFailure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEngine(t, func(t *testing.T, engine string) {
				h := newHarness(t, engine, 2, nil)
				id := h.submit("sleep", "1", 2, domain.MultiNode)
				h.until(id, domain.SessionRunning)
				for idx, code := range tc.exits {
					h.agents.exit(domain.KernelID(fmt.Sprintf("%s-k%d", id, idx)), code)
				}
				if tc.terminate {
					if _, err := h.c.Terminate(h.ctx, id, "user", false); err != nil {
						t.Fatal(err)
					}
				}
				h.until(id, domain.SessionTerminated)
				s := h.session(id)
				if s.Session.Outcome != tc.want {
					t.Errorf("outcome %v, want %v; kernels %+v", s.Session.Outcome, tc.want, s.Kernels)
				}
				if len(h.agents.running()) != 0 {
					t.Errorf("kernels left running: %v", h.agents.running())
				}
			})
		})
	}
}

func TestDependencies(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		good := h.submit("exit:0", "1", 1, domain.SingleNode)
		bad := h.submit("exit:1", "1", 1, domain.SingleNode)
		afterGood := h.submit("sleep", "1", 1, domain.SingleNode, good)
		afterBad := h.submit("sleep", "1", 1, domain.SingleNode, bad)
		h.steps(3)
		h.wantStatus(afterGood, domain.SessionPending)
		h.wantHistory(afterGood, "ScheduleNewSessions:SKIPPED")
		h.agents.exitKernels()
		h.until(afterGood, domain.SessionRunning)
		h.until(afterBad, domain.SessionCancelled)
		h.wantHistory(afterBad, "ScheduleNewSessions:GIVE_UP")
		if r := h.session(afterBad).Session.StatusReason; r == "" {
			t.Fatal("cancelled without a reason")
		}
	})
}

func TestCancelPendingAndTerminatePreparing(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		// Too big for the agent (8 cpu): stays PENDING.
		big := h.submit("sleep", "16", 1, domain.SingleNode)
		// The agent is slow to pull: the session sits in PREPARING.
		h.agents.stallPull = true
		prep := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(big, domain.SessionPending)
		h.until(prep, domain.SessionPreparing)
		if _, err := h.c.Terminate(h.ctx, big, "user asked", false); err != nil {
			t.Fatal(err)
		}
		h.wantStatus(big, domain.SessionCancelled)
		if _, err := h.c.Terminate(h.ctx, prep, "user asked", false); err != nil {
			t.Fatal(err)
		}
		h.until(prep, domain.SessionTerminated)
	})
}

func TestRetriesThenSuccess(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		h.agents.down["agent-0"] = true
		id := h.submit("sleep", "1", 1, domain.SingleNode)
		h.steps(2) // schedule, then two failed prepares (one per cycle)
		h.wantStatus(id, domain.SessionScheduled)
		h.wantHistory(id, "PrepareSessions:NEED_RETRY")
		h.agents.down["agent-0"] = false
		h.until(id, domain.SessionRunning)
	})
}

func TestGiveUpGoesBackToPendingThenCancels(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		// Creation fails on every agent: 3 failed starts → GIVE_UP → PENDING
		// with the agent remembered; after 3 failed placements the session
		// is given up for good.
		h.agents.failCreate = true
		id := h.submit("sleep", "1", 1, domain.SingleNode)
		h.steps(4)
		h.wantHistory(id, "StartSessions:NEED_RETRY", "StartSessions:GIVE_UP")
		s := h.session(id)
		if len(s.Session.AvoidAgents) == 0 {
			t.Fatalf("failed agent not remembered: %+v\n%s", s.Session, h.history(id))
		}
		h.until(id, domain.SessionCancelled)
		h.wantHistory(id, "ScheduleNewSessions:GIVE_UP")
	})
}

func TestUnknownImageFailsClearly(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		id := h.submit("no-such-image", "1", 1, domain.SingleNode)
		h.until(id, domain.SessionCancelled)
		h.wantHistory(id, "PrepareSessions:GIVE_UP")
	})
}

func TestResidenceBounds(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		t.Run("preparing expires back to pending", func(t *testing.T) {
			h := newHarness(t, engine, 1, nil)
			h.agents.stallPull = true
			id := h.submit("sleep", "1", 1, domain.SingleNode)
			h.until(id, domain.SessionPreparing)
			h.advance(16 * time.Minute)
			h.step()
			h.wantHistory(id, "PrepareSessions:EXPIRED")
			if s := h.status(id); s != domain.SessionPending && s != domain.SessionScheduled {
				t.Fatalf("after expiry %v", s)
			}
		})
		t.Run("prepared expires when creation keeps failing", func(t *testing.T) {
			h := newHarness(t, engine, 1, func(g *domain.ResourceGroup) { g.MaxRetries = 100 })
			h.agents.failCreate = true
			id := h.submit("sleep", "1", 1, domain.SingleNode)
			h.until(id, domain.SessionPrepared)
			h.steps(3)
			h.wantStatus(id, domain.SessionPrepared) // retrying, far from giving up
			h.advance(11 * time.Minute)
			h.step()
			h.wantHistory(id, "StartSessions:EXPIRED")
			if s := h.status(id); s != domain.SessionPending && s != domain.SessionScheduled {
				t.Fatalf("after expiry %v", s)
			}
			if !strings.Contains(h.history(id), "last attempt failed: create kernels on agent-0") {
				t.Fatalf("the expiry does not say what kept failing:\n%s", h.history(id))
			}
		})
		t.Run("scheduled expires when its agent never answers", func(t *testing.T) {
			h := newHarness(t, engine, 1, func(g *domain.ResourceGroup) { g.MaxRetries = 100 })
			h.agents.hang["agent-0"] = true
			h.c.Configure(coordinator.Config{CallTimeout: 10 * time.Millisecond}, coordinator.GroupDefaults{})
			id := h.submit("sleep", "1", 1, domain.SingleNode)
			h.until(id, domain.SessionScheduled)
			h.steps(2)
			h.wantStatus(id, domain.SessionScheduled)
			h.advance(16 * time.Minute)
			h.step()
			h.wantHistory(id, "PrepareSessions:EXPIRED")
		})
		t.Run("creating expires when start events are lost", func(t *testing.T) {
			h := newHarness(t, engine, 1, nil)
			h.agents.drop = 1
			id := h.submit("sleep", "1", 1, domain.SingleNode)
			h.until(id, domain.SessionCreating)
			h.advance(11 * time.Minute)
			h.step()
			h.wantHistory(id, "StartSessions:EXPIRED")
			if len(h.agents.running()) != 0 {
				t.Fatalf("kernels of an expired start still run: %v", h.agents.running())
			}
		})
		t.Run("pending bound cancels", func(t *testing.T) {
			h := newHarness(t, engine, 1, func(g *domain.ResourceGroup) { g.Timeouts.Pending = time.Minute })
			id := h.submit("sleep", "64", 1, domain.SingleNode)
			h.step()
			h.advance(2 * time.Minute)
			h.step()
			h.wantStatus(id, domain.SessionCancelled)
			h.wantHistory(id, "ScheduleNewSessions:EXPIRED")
		})
		t.Run("terminating is forced after its bound", func(t *testing.T) {
			h := newHarness(t, engine, 1, nil)
			id := h.submit("sleep", "1", 1, domain.SingleNode)
			h.until(id, domain.SessionRunning)
			h.agents.failDestroy = true
			if _, err := h.c.Terminate(h.ctx, id, "user asked", false); err != nil {
				t.Fatal(err)
			}
			h.steps(5)
			h.wantStatus(id, domain.SessionTerminating) // never given up early
			h.advance(6 * time.Minute)
			h.step()
			h.wantStatus(id, domain.SessionTerminated)
			h.wantHistory(id, "TerminateSessions:EXPIRED")
			if r := h.session(id).Kernels[0].StatusReason; r == "" {
				t.Fatal("forced kernel has no reason")
			}
		})
	})
}

func TestQuotaWaitsWithoutUsingTries(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		limits := domain.Unlimited(h.reg.Len())
		limits[0] = 2000 // 2 cpu
		if err := h.st.PutPolicy(h.ctx, domain.Policy{Scope: domain.ScopeUser, Name: "alice", MaxSlots: limits}); err != nil {
			t.Fatal(err)
		}
		first := h.submit("sleep", "2", 1, domain.SingleNode)
		second := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(first, domain.SessionRunning)
		h.until(second, domain.SessionPending)
		tries, err := h.st.Tries(h.ctx, second)
		if err != nil {
			t.Fatal(err)
		}
		if len(tries) != 0 && tries[domain.HandlerScheduleNewSessions] != 0 {
			t.Fatalf("waiting moved try counts: %v", tries)
		}
		if _, err := h.c.Terminate(h.ctx, first, "done", false); err != nil {
			t.Fatal(err)
		}
		h.until(second, domain.SessionRunning)
	})
}

func TestAgentLoss(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, func(g *domain.ResourceGroup) { g.Selector = "round-robin" })
		running := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(running, domain.SessionRunning)
		lostAgent := h.session(running).Kernels[0].Agent
		h.agents.down[lostAgent] = true
		h.advance(31 * time.Second)
		if err := h.c.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		a, err := h.st.GetAgent(h.ctx, lostAgent)
		if err != nil || a.Status != domain.AgentLost {
			t.Fatalf("agent %+v (%v), want LOST", a, err)
		}
		h.advance(31 * time.Second)
		if err := h.c.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		h.until(running, domain.SessionTerminated)
		if k := h.session(running).Kernels[0]; k.Status != domain.KernelError {
			t.Fatalf("kernel on lost agent %v, want ERROR", k.Status)
		}
		// New work avoids the lost agent.
		next := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(next, domain.SessionRunning)
		if got := h.session(next).Kernels[0].Agent; got == lostAgent {
			t.Fatal("placed on a LOST agent")
		}
	})
}

func TestDuplicateAndReorderedEventsAreHarmless(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		h.agents.dup, h.agents.reorder = 1, true
		var ids []domain.SessionID
		for range 6 {
			ids = append(ids, h.submit("exit:0", "1", 1, domain.SingleNode))
		}
		h.steps(4)
		h.agents.exitKernels()
		h.steps(4)
		for _, id := range ids {
			h.until(id, domain.SessionTerminated)
		}
	})
}

func TestSettleAgentReports(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, func(g *domain.ResourceGroup) { g.Selector = "round-robin" })
		running := func(ids ...domain.KernelID) []coordinator.KernelReport {
			var out []coordinator.KernelReport
			for _, id := range ids {
				out = append(out, coordinator.KernelReport{ID: id, Running: true})
			}
			return out
		}
		id := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(id, domain.SessionRunning)
		k := h.session(id).Kernels[0]
		ended := h.submit("exit:0", "1", 1, domain.SingleNode)
		h.until(ended, domain.SessionRunning)
		h.agents.exitKernels()
		h.until(ended, domain.SessionTerminated)
		endedK := h.session(ended).Kernels[0]
		a, err := h.st.GetAgent(h.ctx, k.Agent)
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.c.Settle(h.ctx, k.Agent, a.Epoch, running(k.ID, "stray-kernel", endedK.ID))
		if err != nil {
			t.Fatal(err)
		}
		// The ended kernel goes whether it ran here or elsewhere; the live
		// one stays.
		if want := []domain.KernelID{endedK.ID, "stray-kernel"}; !slices.Equal(got, want) {
			t.Fatalf("destroy %v, want %v", got, want)
		}
		// Reported as still waiting to start (queued in SLURM): a live
		// kernel is left as it is, one whose session ended is destroyed,
		// so a lost destroy call cannot leave it queued behind its session.
		waiting := []coordinator.KernelReport{{ID: k.ID, Waiting: true}, {ID: endedK.ID, Waiting: true}}
		got, err = h.c.Settle(h.ctx, k.Agent, a.Epoch, waiting)
		if err != nil || !slices.Equal(got, []domain.KernelID{endedK.ID}) {
			t.Fatalf("waiting reports: destroy %v (%v), want only the ended kernel", got, err)
		}
		if s := h.session(id).Kernels[0]; s.Status != domain.KernelRunning {
			t.Fatalf("a waiting report moved the kernel to %v", s.Status)
		}
		// Reported by the other agent, the live kernel is not its to keep.
		other := domain.AgentID("agent-0")
		if other == k.Agent {
			other = "agent-1"
		}
		oa, _ := h.st.GetAgent(h.ctx, other)
		if got, _ := h.c.Settle(h.ctx, other, oa.Epoch, running(k.ID)); !slices.Equal(got, []domain.KernelID{k.ID}) {
			t.Fatalf("foreign kernel: destroy %v", got)
		}
		// A stale epoch changes and destroys nothing, even claiming an exit.
		code := 9
		exited := []coordinator.KernelReport{{ID: k.ID, ExitCode: &code, Reason: "exited"}}
		if got, _ := h.c.Settle(h.ctx, k.Agent, a.Epoch-1, exited); len(got) != 0 {
			t.Fatalf("stale report destroyed %v", got)
		}
		if s := h.session(id).Kernels[0]; s.Status != domain.KernelRunning {
			t.Fatalf("a stale report moved the kernel to %v", s.Status)
		}
		// The kernel_terminated event was lost: the next report settles it
		// (exit code kept) and the agent may clean the kernel up.
		got, err = h.c.Settle(h.ctx, k.Agent, a.Epoch, exited)
		if err != nil || !slices.Equal(got, []domain.KernelID{k.ID}) {
			t.Fatalf("exited report: destroy %v (%v)", got, err)
		}
		if s := h.session(id).Kernels[0]; s.Status != domain.KernelTerminated || s.ExitCode == nil || *s.ExitCode != 9 {
			t.Fatalf("after the exit report the kernel is %v exit %v", s.Status, s.ExitCode)
		}
		h.until(id, domain.SessionTerminated)
	})
}

func TestSettleRecoversALostStartEvent(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		h.agents.drop = 1 // every event is lost
		id := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(id, domain.SessionCreating)
		k := h.session(id).Kernels[0]
		a, _ := h.st.GetAgent(h.ctx, k.Agent)
		got, err := h.c.Settle(h.ctx, k.Agent, a.Epoch, []coordinator.KernelReport{{ID: k.ID, Running: true}})
		if err != nil || len(got) != 0 {
			t.Fatalf("destroy %v (%v), want nothing", got, err)
		}
		h.until(id, domain.SessionRunning)
	})
}

func TestAgentCallTimeoutIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		// The handler waits out the call (1s), so the step records it.
		h.c.Configure(coordinator.Config{CallTimeout: time.Second, CallWait: 2 * time.Second}, coordinator.GroupDefaults{})
		h.agents.hang["agent-0"] = true
		id := h.submit("sleep", "1", 1, domain.SingleNode)
		h.step()
		h.wantStatus(id, domain.SessionScheduled)
		h.wantHistory(id, "PrepareSessions:NEED_RETRY")
		entries, err := h.st.History(h.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if last := entries[len(entries)-1]; !strings.Contains(last.Message, "deadline exceeded") {
			t.Fatalf("last entry %q does not say the call timed out", last.Message)
		}
		h.agents.hang["agent-0"] = false
		h.advance(time.Minute) // past the isolation's first probe
		h.until(id, domain.SessionRunning)
	})
}

// The shared group_defaults apply live: max_retries to a group whose own
// is zero, the bounds to groups created from then on. A group's bound of
// 0s is no bound, as the API promises, and a shared default does not put
// one back.
func TestSharedDefaultsApplyLive(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, func(g *domain.ResourceGroup) {
			g.MaxRetries = 0
			g.Timeouts.Pending = 0
		})
		big := h.submit("sleep", "64", 1, domain.SingleNode)
		h.advance(10 * time.Minute)
		h.step()
		h.wantStatus(big, domain.SessionPending)
		// The cluster's shared settings change: a pending bound and one
		// retry.
		h.c.Configure(h.c.Config(), coordinator.GroupDefaults{MaxRetries: 1, Timeouts: domain.Timeouts{Pending: time.Minute}})
		h.step()
		h.wantStatus(big, domain.SessionPending) // its group's 0s is no bound
		want := domain.DefaultTimeouts()
		want.Pending = time.Minute
		if got := h.c.NewGroupTimeouts(); got != want {
			t.Errorf("a new group's bounds %+v, want %+v (pending from the shared defaults, the rest built in)", got, want)
		}
		h.agents.failCreate = true
		id := h.submit("sleep", "1", 1, domain.SingleNode)
		h.steps(4)
		h.wantHistory(id, "StartSessions:GIVE_UP")
		if got := h.results(id); slices.Contains(got, "StartSessions:NEED_RETRY") {
			t.Fatalf("retried despite max_retries 1: %v", got)
		}
	})
}

// TestCreatedButUnrecordedStartCarriesOn is the window between an agent
// creating kernels and the coordinator recording CREATING: the answer is
// lost (a manager killed there leaves the same state). The kernels run and
// their events arrive while the session is still PREPARED; it must carry on
// to RUNNING — and, for a kernel that already exited, to its end — rather
// than wait for the PREPARED bound and then destroy running kernels.
func TestCreatedButUnrecordedStartCarriesOn(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		h.agents.loseCreateAnswer = true
		run := h.submit("sleep", "1", 1, domain.SingleNode)
		done := h.submit("exit:0", "1", 1, domain.SingleNode)
		h.until(run, domain.SessionPrepared)
		h.until(done, domain.SessionPrepared)
		h.step() // StartSessions: kernels created, answer lost
		h.agents.loseCreateAnswer = false
		h.agents.exitKernels()
		h.until(run, domain.SessionRunning)
		h.until(done, domain.SessionTerminated)
		if o := h.session(done).Session.Outcome; o != domain.OutcomeSuccess {
			t.Fatalf("exit:0 outcome %v", o)
		}
		if len(h.agents.running()) != 1 {
			t.Fatalf("running kernels %v, want only the sleep", h.agents.running())
		}
	})
}

// TestEndedKernelSessionCannotStartOver is the chaos test's stuck session:
// a 2-kernel session whose first kernel was created and has already exited
// while the second's agent is gone. Going back to PENDING is refused (the
// ended kernel cannot follow), so giving up, expiring and agent loss must
// end the session instead of leaving it PREPARED forever.
func TestEndedKernelSessionCannotStartOver(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"give-up", "agent-lost"} {
		t.Run(path, func(t *testing.T) {
			forEngine(t, func(t *testing.T, engine string) {
				h := newHarness(t, engine, 2, func(g *domain.ResourceGroup) {
					if path == "agent-lost" {
						g.MaxRetries = 10 // the agent is lost before StartSessions gives up
					}
				})
				// 6 cpu each on 8-cpu agents: one kernel per agent.
				id := h.submit("exit:0", "6", 2, domain.MultiNode)
				h.agents.refuseCreate["agent-1"] = true
				h.until(id, domain.SessionPrepared)
				h.step() // agent-0 creates its kernel; agent-1 fails
				h.agents.down["agent-1"] = true
				h.agents.exitKernels()
				h.step()
				s := h.session(id)
				if s.Session.Status == domain.SessionPending || !slices.ContainsFunc(s.Kernels, func(k domain.Kernel) bool {
					return k.Status == domain.KernelTerminated
				}) {
					t.Fatalf("setup: session %v, kernels %+v", s.Session.Status, s.Kernels)
				}
				switch path {
				case "give-up":
					h.until(id, domain.SessionTerminating)
					h.wantHistory(id, "StartSessions:GIVE_UP")
				case "agent-lost":
					h.advance(31 * time.Second)
					if err := h.c.Sweep(h.ctx); err != nil {
						t.Fatal(err)
					}
					h.advance(31 * time.Second)
					if err := h.c.Sweep(h.ctx); err != nil {
						t.Fatal(err)
					}
					h.wantHistory(id, "AgentLost:EXPIRED")
				}
				// The kernel on the dead agent ends with the agent's loss,
				// well inside the TERMINATING bound.
				for range 3 {
					h.advance(31 * time.Second)
					if err := h.c.Sweep(h.ctx); err != nil {
						t.Fatal(err)
					}
					h.step()
				}
				h.until(id, domain.SessionTerminated)
				if o := h.session(id).Session.Outcome; o == domain.OutcomeSuccess {
					t.Fatalf("outcome %v for a session that never ran whole", o)
				}
				for _, k := range h.session(id).Kernels {
					if k.Agent == "agent-1" && k.Status != domain.KernelError {
						t.Fatalf("kernel on the lost agent is %v, want ERROR", k.Status)
					}
				}
			})
		})
	}
}

// TestImpossibleCreateEndsAtOnce: an agent refusing a multi-node
// session's spec ends the session on that attempt, without retries. Kernels
// not yet started are cancelled and their agents told to destroy them; a
// kernel that already runs (an earlier attempt created it) cannot be
// cancelled, so the session terminates instead.
func TestImpossibleCreateEndsAtOnce(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"nothing started", "a kernel runs"} {
		t.Run(path, func(t *testing.T) {
			forEngine(t, func(t *testing.T, engine string) {
				h := newHarness(t, engine, 2, nil)
				// 6 cpu each on 8-cpu agents: one kernel per agent.
				id := h.submit("sleep", "6", 2, domain.MultiNode)
				want := domain.SessionCancelled
				if path == "a kernel runs" {
					// agent-1 fails (retryably) while agent-0's kernel
					// starts; the next attempt is refused.
					h.agents.refuseCreate["agent-1"] = true
					h.until(id, domain.SessionPrepared)
					h.step() // agent-0 creates its kernel; agent-1 fails
					h.agents.refuseCreate["agent-1"] = false
					want = domain.SessionTerminated
				}
				retries := h.count(id, "StartSessions:NEED_RETRY")
				h.agents.invalidSpec["agent-1"] = true
				h.until(id, want)
				if want == domain.SessionCancelled {
					if r := h.session(id).Session.StatusReason; !strings.Contains(r, "invalid kernel spec") {
						t.Errorf("reason %q does not name the refusal", r)
					}
				} else if hist := h.history(id); !strings.Contains(hist, "GIVE_UP PREPARED→TERMINATING") ||
					!strings.Contains(hist, "invalid kernel spec") {
					t.Errorf("history does not say why the session ended:\n%s", hist)
				}
				if n := len(h.agents.running()); n != 0 {
					t.Errorf("%d kernels still run on agents, want none", n)
				}
				// Only the injected retryable failures were retried; the
				// refusal gives up on its first attempt.
				if h.count(id, "StartSessions:NEED_RETRY") != retries || h.count(id, "StartSessions:GIVE_UP") != 1 ||
					h.count(id, "ScheduleNewSessions:SUCCESS") != 1 {
					t.Errorf("history %v, want one placement, %d retries before the refusal and one give-up", h.results(id), retries)
				}
			})
		})
	}
}

// TestForcedTerminate: a forced end kills kernels without grace at once and
// frees their slots before any cycle, also for a session whose graceful
// termination is stuck; a kernel whose agent does not answer keeps its
// slots, since it may still run.
func TestForcedTerminate(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, func(g *domain.ResourceGroup) { g.Selector = "round-robin" })
		a := h.submit("sleep", "1", 1, domain.SingleNode)
		b := h.submit("sleep", "1", 1, domain.SingleNode)
		c := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(a, domain.SessionRunning)
		h.until(b, domain.SessionRunning)
		h.until(c, domain.SessionRunning)

		got, err := h.c.Terminate(h.ctx, a, "user asked", true)
		if err != nil {
			t.Fatal(err)
		}
		if k := got.Kernels[0]; k.Status != domain.KernelTerminated || got.Session.Status != domain.SessionTerminating {
			t.Fatalf("after a forced terminate: session %v, kernel %v (%s)", got.Session.Status, k.Status, k.StatusReason)
		}
		if _, live := h.agents.running()[got.Kernels[0].ID]; live || !slices.Contains(h.agents.forced, got.Kernels[0].ID) {
			t.Fatalf("kernel not destroyed with force: forced %v", h.agents.forced)
		}
		h.check() // its slots are released already
		h.step()
		h.wantStatus(a, domain.SessionTerminated)

		// A graceful end that cannot finish, then forced.
		h.agents.failDestroy = true
		if _, err := h.c.Terminate(h.ctx, b, "user asked", false); err != nil {
			t.Fatal(err)
		}
		h.steps(2)
		h.wantStatus(b, domain.SessionTerminating)
		h.agents.failDestroy = false
		if got, err := h.c.Terminate(h.ctx, b, "user asked again", true); err != nil || got.Kernels[0].Status != domain.KernelTerminated {
			t.Fatalf("forced terminate of a terminating session: %v, %+v", err, got.Kernels)
		}

		// An unreachable agent: the kernel may still run, so it keeps its
		// slots and the session stays TERMINATING.
		agent := h.session(c).Kernels[0].Agent
		h.agents.down[agent] = true
		got, err = h.c.Terminate(h.ctx, c, "user asked", true)
		if err != nil {
			t.Fatal(err)
		}
		if k := got.Kernels[0]; k.Status != domain.KernelRunning || got.Session.Status != domain.SessionTerminating {
			t.Fatalf("unreachable agent: session %v, kernel %v", got.Session.Status, k.Status)
		}
		h.check()
	})
}

// TestSweepPrunesTheChangeFeed: changes older than the retention go, the
// latest stays, and the feed carries on after it.
func TestSweepPrunesTheChangeFeed(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		id := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(id, domain.SessionRunning)
		feed := func() []store.Change {
			cs, err := h.st.Changes(h.ctx, store.ChangeFilter{})
			if err != nil {
				t.Fatal(err)
			}
			return cs
		}
		before := feed()
		if err := h.c.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		if got := feed(); len(got) != len(before) {
			t.Fatalf("a sweep within the retention pruned %d of %d changes", len(before)-len(got), len(before))
		}
		h.advance(25 * time.Hour)
		if err := h.c.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		got := feed()
		if len(got) != 1 || got[0].Pos != before[len(before)-1].Pos {
			t.Fatalf("after the retention the feed is %+v, want only the latest of %d", got, len(before))
		}
		if _, err := h.c.Terminate(h.ctx, id, "done", false); err != nil {
			t.Fatal(err)
		}
		if next := feed(); len(next) < 2 || next[1].Pos <= got[0].Pos {
			t.Fatalf("feed after pruning: %+v", next)
		}
	})
}

// TestAgentLossLeavesOtherAgentsAlone: losing an agent with nothing on it
// moves no session placed elsewhere.
func TestAgentLossLeavesOtherAgentsAlone(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 2, nil)
		h.agents.stallPull = true
		id := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(id, domain.SessionPreparing)
		if a := h.session(id).Kernels[0].Agent; a != "agent-0" {
			t.Fatalf("setup: placed on %s, want agent-0", a)
		}
		h.agents.down["agent-1"] = true
		for range 3 {
			h.advance(31 * time.Second)
			if err := h.c.Sweep(h.ctx); err != nil {
				t.Fatal(err)
			}
		}
		if a, err := h.st.GetAgent(h.ctx, "agent-1"); err != nil || a.Status != domain.AgentLost {
			t.Fatalf("agent-1: %+v (%v), want LOST", a, err)
		}
		h.wantStatus(id, domain.SessionPreparing)
		if strings.Contains(h.history(id), "AgentLost") {
			t.Fatalf("a session on a healthy agent was moved by another agent's loss:\n%s", h.history(id))
		}
	})
}

// TestSweepRollsUpUsage: the sweep credits a running session's slots to
// the hourly accounting history, once per span of time.
func TestSweepRollsUpUsage(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, engine string) {
		h := newHarness(t, engine, 1, nil)
		if err := h.c.Sweep(h.ctx); err != nil { // the first pass starts the history
			t.Fatal(err)
		}
		id := h.submit("sleep", "1", 1, domain.SingleNode)
		h.until(id, domain.SessionRunning)
		cpu := func() float64 {
			if err := h.c.Sweep(h.ctx); err != nil {
				t.Fatal(err)
			}
			rows, err := h.st.UsageHistory(h.ctx, store.UsageFilter{Slot: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			var sum float64
			for _, r := range rows {
				sum += r.Amount
			}
			return sum
		}
		first := cpu()
		if again := cpu(); again != first {
			t.Fatalf("a second sweep at the same time credited %v more", again-first)
		}
		h.advance(time.Hour)
		held, _ := h.reg.Lookup("cpu")
		want := float64(h.session(id).Kernels[0].Requested.At(held)) * 3600
		if got := cpu() - first; got < want-1e-6 || got > want+1e-6 {
			t.Fatalf("an hour later the history grew by %v, want %v", got, want)
		}
	})
}
