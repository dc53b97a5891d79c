package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	. "github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
)

// devicesOf maps each placed kernel to its grants as "device=share".
func devicesOf(plan framework.Plan) map[string][]string {
	out := map[string][]string{}
	for _, p := range plan.Placements {
		for _, k := range p.Kernels {
			for _, g := range k.Devices {
				out[string(k.Kernel)] = append(out[string(k.Kernel)],
					g.Device+"="+domain.FormatQuantity(domain.KindShares, g.Share))
			}
		}
	}
	return out
}

func TestDevicesAssignedDistinct(t *testing.T) {
	tests := []struct {
		name     string
		agents   []domain.Agent
		held     map[domain.AgentID]map[string]domain.Quantity
		sessions []framework.PendingSession
		want     map[string][]string
		waiting  []string
	}{{
		// Two kernels asking one GPU each on a 2-GPU agent: each gets its
		// own, not "a GPU".
		name:   "one each",
		agents: Agents(MakeAgent("a1", "cpu=8,mem=32g").Devices("cuda:2")),
		sessions: Sessions(MakeSession("s1", "cpu=1,mem=1g,cuda.device=1"),
			MakeSession("s2", "cpu=1,mem=1g,cuda.device=1").Created(1)),
		want: map[string][]string{"s1-k0": {"cuda:0=1"}, "s2-k0": {"cuda:1=1"}},
	}, {
		name:     "two distinct for one kernel",
		agents:   Agents(MakeAgent("a1", "cpu=8,mem=32g").Devices("cuda:4")),
		sessions: Sessions(MakeSession("s1", "cpu=1,mem=1g,cuda.device=2")),
		want:     map[string][]string{"s1-k0": {"cuda:0=1", "cuda:1=1"}},
	}, {
		// A live kernel holds cuda:0 (after a manager restart, say): the
		// round starts from what the store says is held.
		name:   "held devices are skipped",
		agents: Agents(MakeAgent("a1", "cpu=8,mem=32g").Devices("cuda:2").Occupied("cuda.device=1")),
		held:   map[domain.AgentID]map[string]domain.Quantity{"a1": {"cuda:0": 1000}},
		sessions: Sessions(MakeSession("s1", "cpu=1,mem=1g,cuda.device=1"),
			MakeSession("s2", "cpu=1,mem=1g,cuda.device=1").Created(1)),
		want:    map[string][]string{"s1-k0": {"cuda:1=1"}},
		waiting: []string{"s2"},
	}, {
		// A device held by a kernel the count does not show (a grant with
		// no occupancy, never valid, but a round must not hand it out).
		name:     "devices cap the count",
		agents:   Agents(MakeAgent("a1", "cpu=8,mem=32g").Devices("cuda:2")),
		held:     map[domain.AgentID]map[string]domain.Quantity{"a1": {"cuda:0": 1000, "cuda:1": 1000}},
		sessions: Sessions(MakeSession("s1", "cpu=1,mem=1g,cuda.device=1")),
		want:     map[string][]string{},
		waiting:  []string{"s1"},
	}, {
		name:     "single-node cluster gets distinct devices per kernel",
		agents:   Agents(MakeAgent("a1", "cpu=8,mem=32g").Devices("cuda:4")),
		sessions: Sessions(MakeSession("s1", "cpu=1,mem=1g,cuda.device=2").Single(2)),
		want:     map[string][]string{"s1-k0": {"cuda:0=1", "cuda:1=1"}, "s1-k1": {"cuda:2=1", "cuda:3=1"}},
	}, {
		name: "gang across agents",
		agents: Agents(MakeAgent("a1", "cpu=8,mem=32g").Devices("cuda:1"),
			MakeAgent("a2", "cpu=8,mem=32g").Devices("cuda:1")),
		sessions: Sessions(MakeSession("s1", "cpu=1,mem=1g,cuda.device=1").Multi(2)),
		want:     map[string][]string{"s1-k0": {"cuda:0=1"}, "s1-k1": {"cuda:0=1"}},
	}, {
		// Fractional shares pack onto the fuller device first.
		name:   "shares pack",
		agents: Agents(MakeAgent("a1", "cpu=8,mem=32g").Devices("cuda.shares:2")),
		sessions: Sessions(MakeSession("s1", "cpu=1,mem=1g,cuda.shares=0.5"),
			MakeSession("s2", "cpu=1,mem=1g,cuda.shares=0.5").Created(1),
			MakeSession("s3", "cpu=1,mem=1g,cuda.shares=0.7").Created(2),
			MakeSession("s4", "cpu=1,mem=1g,cuda.shares=0.3").Created(3),
			MakeSession("s5", "cpu=1,mem=1g,cuda.shares=0.1").Created(4)),
		want: map[string][]string{"s1-k0": {"cuda-shared:0=0.5"}, "s2-k0": {"cuda-shared:0=0.5"},
			"s3-k0": {"cuda-shared:1=0.7"}, "s4-k0": {"cuda-shared:1=0.3"}},
		waiting: []string{"s5"},
	}, {
		// Agents without devices keep count-only placement.
		name:     "count-only agent",
		agents:   Agents(MakeAgent("a1", "cpu=8,mem=32g,cuda.device=2")),
		sessions: Sessions(MakeSession("s1", "cpu=1,mem=1g,cuda.device=1")),
		want:     map[string][]string{},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := MakeSnapshot(tc.agents, tc.sessions)
			snap.DeviceHeld = tc.held
			plan := schedule(t, snap)
			if diff := cmp.Diff(tc.want, devicesOf(plan)); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
			var waiting []string
			for _, d := range plan.Waiting {
				waiting = append(waiting, string(d.Session))
			}
			if diff := cmp.Diff(tc.waiting, waiting); diff != "" {
				t.Errorf("waiting (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeviceBlocker(t *testing.T) {
	snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=8,mem=32g").Devices("cuda:2").Occupied("cuda.device=1")),
		Sessions(MakeSession("s1", "cpu=1,mem=1g,cuda.device=2")))
	snap.DeviceHeld = map[domain.AgentID]map[string]domain.Quantity{"a1": {"cuda:1": 1000}}
	plan := schedule(t, snap)
	bs := blockersOf(plan, "s1")
	if len(bs) != 1 || bs[0].Slot != "cuda.device" || bs[0].Requested != 2000 || bs[0].Available != 1000 {
		t.Fatalf("blockers = %+v, want one cuda.device blocker 2 requested, 1 free", bs)
	}
	if got, want := bs[0].Message(snap.Slots), "not enough free cuda.device: requested 2, at most 1 free on any eligible agent; "+
		"a1 has 1 of 2 devices free (cuda:0)"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}

	// A fraction of a whole-device slot takes a whole device; the count
	// then says 1.5 free while one device is: a request of 1.5 fits the
	// count but not the devices, and waits with a blocker saying why.
	snap = MakeSnapshot(Agents(MakeAgent("a1", "cpu=8,mem=32g").Devices("cuda:2")),
		Sessions(MakeSession("s1", "cpu=1,mem=1g,cuda.device=0.5"),
			MakeSession("s2", "cpu=1,mem=1g,cuda.device=1.5").Created(1)))
	plan = schedule(t, snap)
	if diff := cmp.Diff(map[string][]string{"s1-k0": {"cuda:0=1"}}, devicesOf(plan)); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	bs = blockersOf(plan, "s2")
	if len(bs) != 1 || bs[0].Slot != "cuda.device" || bs[0].Available != 1000 || bs[0].Detail == "" {
		t.Errorf("blockers = %+v, want one cuda.device blocker, 1 free, with a detail", bs)
	}
}

// TestPropertyDevicesNeverShared draws agents with whole and shared fake
// devices, some already held, and sessions asking for them, and checks the
// plan against the invariant: no whole device is granted twice or while
// held, no shared device beyond one whole, every kernel on an agent with
// devices gets grants that add up to its request, grants name only the
// agent's own devices, and memory follows the share.
func TestPropertyDevicesNeverShared(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		reg := Registry()
		gpu, _ := reg.Lookup("cuda.device")
		shares, _ := reg.Lookup("cuda.shares")
		nAgents := rapid.IntRange(1, 4).Draw(t, "agents")
		var agents []domain.Agent
		held := map[domain.AgentID]map[string]domain.Quantity{}
		for i := range nAgents {
			id := fmt.Sprintf("a%d", i)
			b := MakeAgent(id, "cpu=64,mem=256g").Devices(fmt.Sprintf("cuda:%d,cuda.shares:%d",
				rapid.IntRange(0, 4).Draw(t, "whole"), rapid.IntRange(0, 3).Draw(t, "shared")))
			a := b.Obj()
			h := map[string]domain.Quantity{}
			for _, d := range a.Devices {
				var q domain.Quantity
				if d.Slot == "cuda.device" {
					q = domain.Quantity(rapid.IntRange(0, 1).Draw(t, "heldWhole")) * 1000
					a.Occupied[gpu] += q
				} else {
					q = domain.Quantity(rapid.IntRange(0, 10).Draw(t, "heldShare")) * 100
					a.Occupied[shares] += q
				}
				if q > 0 {
					h[d.ID] = q
				}
			}
			held[a.ID] = h
			agents = append(agents, a)
		}
		nSessions := rapid.IntRange(0, 12).Draw(t, "sessions")
		var sessions []framework.PendingSession
		for i := range nSessions {
			spec := "cpu=1,mem=1g"
			if rapid.Bool().Draw(t, "wantsWhole") {
				spec += fmt.Sprintf(",cuda.device=%d", rapid.IntRange(1, 3).Draw(t, "nWhole"))
			} else {
				spec += fmt.Sprintf(",cuda.shares=%.1f", float64(rapid.IntRange(1, 25).Draw(t, "tenths"))/10)
			}
			b := MakeSession(fmt.Sprintf("s%02d", i), spec).Created(i)
			switch rapid.IntRange(0, 2).Draw(t, "mode") {
			case 1:
				b = b.Single(rapid.IntRange(1, 2).Draw(t, "n"))
			case 2:
				b = b.Multi(rapid.IntRange(1, 3).Draw(t, "n"))
			}
			sessions = append(sessions, b.Obj())
		}
		snap := MakeSnapshot(agents, sessions)
		snap.DeviceHeld = held
		plan, err := scheduler.New(scheduler.NewRegistry()).Schedule(snap)
		if err != nil {
			t.Fatalf("Schedule: %v", err)
		}

		// The same snapshot with agents and their devices in another order
		// gives the same plan, grants included.
		shuffled := *snap
		shuffled.Agents = make([]domain.Agent, len(agents))
		for i, j := range rapid.Permutation(intsUpTo(len(agents))).Draw(t, "agentOrder") {
			a := agents[j]
			a.Devices = make([]domain.Device, len(agents[j].Devices))
			for k, l := range rapid.Permutation(intsUpTo(len(a.Devices))).Draw(t, "deviceOrder") {
				a.Devices[k] = agents[j].Devices[l]
			}
			shuffled.Agents[i] = a
		}
		again, err := scheduler.New(scheduler.NewRegistry()).Schedule(&shuffled)
		if err != nil {
			t.Fatalf("Schedule: %v", err)
		}
		if diff := cmp.Diff(plan.Placements, again.Placements); diff != "" {
			t.Fatalf("placements depend on input order (-first +shuffled):\n%s", diff)
		}

		byID := map[domain.AgentID]domain.Agent{}
		for _, a := range agents {
			byID[a.ID] = a
		}
		use := map[domain.AgentID]map[string]domain.Quantity{}
		for id, h := range held {
			use[id] = map[string]domain.Quantity{}
			for d, q := range h {
				use[id][d] = q
			}
		}
		for _, p := range plan.Placements {
			for _, k := range p.Kernels {
				a := byID[k.Agent]
				sum := map[string]domain.Quantity{}
				for _, g := range k.Devices {
					var dev *domain.Device
					for i := range a.Devices {
						if a.Devices[i].ID == g.Device {
							dev = &a.Devices[i]
						}
					}
					if dev == nil {
						t.Fatalf("kernel %s granted %s, not a device of %s", k.Kernel, g.Device, a.ID)
					}
					if g.Share <= 0 || dev.Slot == "cuda.device" && g.Share != 1000 {
						t.Fatalf("kernel %s: share %d of %s", k.Kernel, g.Share, g.Device)
					}
					if want := int64(float64(dev.Memory) * float64(g.Share) / 1000); g.Memory != want {
						t.Fatalf("kernel %s: memory %d of %s, want %d", k.Kernel, g.Memory, g.Device, want)
					}
					use[a.ID][g.Device] += g.Share
					if use[a.ID][g.Device] > 1000 {
						t.Fatalf("device %s of %s assigned beyond whole: %d", g.Device, a.ID, use[a.ID][g.Device])
					}
					sum[dev.Slot] += g.Share
				}
				if len(a.Devices) > 0 {
					for _, slot := range []domain.SlotID{gpu, shares} {
						name := reg.Type(slot).Name
						if sum[name] != k.Slots[slot] {
							t.Fatalf("kernel %s: grants of %s add up to %d, request %d", k.Kernel, name, sum[name], k.Slots[slot])
						}
					}
				}
			}
		}
	})
}

func intsUpTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestJobGangGivesBackDevices: a job's gang that does not fit whole gives
// back the devices its members were granted in the round, so a session
// behind it can have them.
func TestJobGangGivesBackDevices(t *testing.T) {
	snap := MakeSnapshot(Agents(MakeAgent("a1", "cpu=8,mem=32g").Devices("cuda:2")),
		Sessions(MakeSession("j-0", "cpu=1,mem=1g,cuda.device=1").Job("j"),
			MakeSession("j-1", "cpu=1,mem=1g,cuda.device=1").Job("j").Created(1),
			MakeSession("j-2", "cpu=1,mem=1g,cuda.device=1").Job("j").Created(2),
			MakeSession("solo", "cpu=1,mem=1g,cuda.device=2").Created(3)))
	// Three members needed, two devices: the gang cannot place whole.
	snap.Jobs = map[domain.JobID]framework.JobInfo{"j": {MinAvailable: 3, Live: 3}}
	plan := schedule(t, snap)
	if diff := cmp.Diff(map[string][]string{"solo-k0": {"cuda:0=1", "cuda:1=1"}}, devicesOf(plan)); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
}
