package validate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	. "github.com/sokovan-go/sokovan/internal/scheduler/schedtest"
	"github.com/sokovan-go/sokovan/internal/scheduler/validate"
)

func cpu(s string) domain.Quantity {
	_, q, err := Registry().Parse("cpu", s)
	if err != nil {
		panic(err)
	}
	return q
}

func TestValidators(t *testing.T) {
	t.Parallel()
	limit := func(c string) domain.Vec {
		v := domain.Unlimited(Registry().Len())
		v[0] = cpu(c)
		return v
	}
	tests := []struct {
		name  string
		v     framework.Validator
		s     *SessionB
		setup func(*framework.Snapshot)
		want  []framework.Blocker
	}{
		{"group active passes", validate.GroupState{}, MakeSession("s", "cpu=1"), nil, nil},
		{"group stopped holds", validate.GroupState{}, MakeSession("s", "cpu=1"),
			func(s *framework.Snapshot) { s.Group.State = domain.GroupStopped },
			[]framework.Blocker{{Kind: framework.BlockResourceGroupState, Scope: "group:default", Detail: "STOPPED"}}},
		{"group draining still schedules what it holds", validate.GroupState{}, MakeSession("s", "cpu=1"),
			func(s *framework.Snapshot) { s.Group.State = domain.GroupDraining }, nil},
		{"all types allowed by default", validate.SessionType{}, MakeSession("s", "cpu=1").Type(domain.TypeInference), nil, nil},
		{"type not allowed is impossible", validate.SessionType{}, MakeSession("s", "cpu=1").Type(domain.TypeBatch),
			func(s *framework.Snapshot) { s.Group.AllowedTypes = []domain.SessionType{domain.TypeInteractive} },
			[]framework.Blocker{{Kind: framework.BlockSessionType, Scope: "group:default", Detail: "batch", Impossible: true}}},
		{"no start time passes", validate.StartTime{}, MakeSession("s", "cpu=1"), nil, nil},
		{"start time exactly now passes", validate.StartTime{}, MakeSession("s", "cpu=1").StartsAt(0), nil, nil},
		{"start time ahead holds", validate.StartTime{}, MakeSession("s", "cpu=1").StartsAt(1), nil,
			[]framework.Blocker{{Kind: framework.BlockStartTime, Scope: "session:s", Detail: "2026-01-01T00:00:01Z"}}},
		{"every dependency reported", validate.Dependencies{}, MakeSession("s", "cpu=1").DependsOn("run", "gone"),
			func(s *framework.Snapshot) {
				s.Dependencies = map[domain.SessionID]framework.DependencyState{"run": {Status: domain.SessionPreparing}}
			},
			[]framework.Blocker{
				{Kind: framework.BlockDependency, Scope: "session:run", Detail: "PREPARING"},
				{Kind: framework.BlockDependency, Scope: "session:gone", Detail: "missing", Impossible: true},
			}},
		{"terminated without success is impossible", validate.Dependencies{}, MakeSession("s", "cpu=1").DependsOn("d"),
			func(s *framework.Snapshot) {
				s.Dependencies = map[domain.SessionID]framework.DependencyState{"d": {Status: domain.SessionTerminated}}
			},
			[]framework.Blocker{{Kind: framework.BlockDependency, Scope: "session:d", Detail: "TERMINATED", Impossible: true}}},
		{"no policy, no quota", validate.Quota{}, MakeSession("s", "cpu=100"), nil, nil},
		{"exactly at the limit passes", validate.Quota{}, MakeSession("s", "cpu=2"),
			// held 2 + asked 2 = 4 ≤ 4
			func(s *framework.Snapshot) {
				s.Policies.Users = map[string]domain.Policy{"u1": {MaxSlots: limit("4")}}
				s.Usage.Users = map[string]framework.Use{"u1": {Occupied: Slots("cpu=2")}}
			}, nil},
		{"a fraction over the limit holds", validate.Quota{}, MakeSession("s", "cpu=2.001"),
			// held 2 + asked 2.001 = 4.001 > 4 → 2 left
			func(s *framework.Snapshot) {
				s.Policies.Users = map[string]domain.Policy{"u1": {MaxSlots: limit("4")}}
				s.Usage.Users = map[string]framework.Use{"u1": {Occupied: Slots("cpu=2")}}
			},
			[]framework.Blocker{{Kind: framework.BlockQuota, Scope: "user:u1", Slot: "cpu", Requested: cpu("2.001"), Available: cpu("2"), Capacity: cpu("4")}}},
		{"held over a lowered limit leaves zero, not negative", validate.Quota{}, MakeSession("s", "cpu=1"),
			// held 6 > limit 4 → available max(4-6, 0) = 0
			func(s *framework.Snapshot) {
				s.Policies.Projects = map[string]domain.Policy{"p1": {MaxSlots: limit("4")}}
				s.Usage.Projects = map[string]framework.Use{"p1": {Occupied: Slots("cpu=6")}}
			},
			[]framework.Blocker{{Kind: framework.BlockQuota, Scope: "project:p1", Slot: "cpu", Requested: cpu("1"), Available: 0, Capacity: cpu("4")}}},
		{"unlimited slots are not checked", validate.Quota{}, MakeSession("s", "cpu=1,mem=1000g"),
			func(s *framework.Snapshot) {
				s.Policies.Domains = map[string]domain.Policy{"d1": {MaxSlots: limit("4")}}
			}, nil},
		{"below the session cap passes", validate.Concurrency{}, MakeSession("s", "cpu=1"),
			func(s *framework.Snapshot) {
				s.Policies.Users = map[string]domain.Policy{"u1": {MaxConcurrentSessions: 3}}
				s.Usage.Users = map[string]framework.Use{"u1": {Active: 2}}
			}, nil},
		{"at the session cap holds", validate.Concurrency{}, MakeSession("s", "cpu=1"),
			func(s *framework.Snapshot) {
				s.Policies.Domains = map[string]domain.Policy{"d1": {MaxConcurrentSessions: 3}}
				s.Usage.Domains = map[string]framework.Use{"d1": {Active: 3}}
			},
			[]framework.Blocker{{Kind: framework.BlockConcurrency, Scope: "domain:d1", Requested: 1, Available: 0, Capacity: 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snap := MakeSnapshot(nil, Sessions(tc.s))
			if tc.setup != nil {
				tc.setup(snap)
			}
			st := framework.NewState(snap)
			got := tc.v.Validate(st, &st.Sessions[0], nil)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("%s blockers (-want +got):\n%s", tc.v.Name(), diff)
			}
		})
	}
}
