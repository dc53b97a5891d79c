package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Engine is how the suite reaches one storage engine.
type Engine struct {
	// NewDB makes an empty database for one test, arranges its removal
	// with t.Cleanup, and returns a locator Open and Exec understand.
	NewDB func(t testing.TB) string
	// Open opens a new store instance, with its own connections, on db.
	Open func(ctx context.Context, db string, opts Options) (store.Store, error)
	// Exec runs one raw SQL statement on db; tests use it to damage rows
	// the way a bad migration or a hand edit would.
	Exec func(t testing.TB, db string, query string)

	// For RunSchema only. Migrator is goose's Provider over the engine's
	// migrations on db; it closes what it opens with t.Cleanup.
	Migrator func(t testing.TB, db string) (Migrator, error)
	// DumpSchema writes the schema of db, one object after the other in
	// a fixed order, without goose's own table.
	DumpSchema func(t testing.TB, db string) string
}

// Options are what the suite varies when it opens a store.
type Options struct {
	Registry *domain.Registry
	Fault    store.FaultHook
}

// Run runs the whole suite against the engine, each test on its own
// database and in parallel with the others.
func Run(t *testing.T, e Engine) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e Engine)
	}{
		{"ResourceGroups", testResourceGroups},
		{"RemoveResourceGroup", testRemoveResourceGroup},
		{"RemoveRacesRegistration", testRemoveRacesRegistration},
		{"Deployments", testDeployments},
		{"DeploymentRoutes", testDeploymentRoutes},
		{"RouteFollowsSession", testRouteFollowsSession},
		{"DeploymentHistory", testDeploymentHistory},
		{"DeploymentTokens", testDeploymentTokens},
		{"DeploymentAutoscaleAndLoad", testDeploymentAutoscaleAndLoad},
		{"MoveDeployment", testMoveDeployment},
		{"DeploymentStartFailures", testDeploymentStartFailures},
		{"ConcurrentStartFailures", testConcurrentStartFailures},
		{"ScaleDeployment", testScaleDeployment},
		{"UserUpdateLeavesControllerColumns", testUserUpdateLeavesControllerColumns},
		{"EndRollout", testEndRollout},
		{"GroupGenerations", testGroupGenerations},
		{"GroupSlots", testGroupSlots},
		{"Agents", testAgents},
		{"RegisterGuard", testRegisterGuard},
		{"RetireAgent", testRetireAgent},
		{"RetireRacesRegistration", testRetireRacesRegistration},
		{"SnapshotCacheIsExact", testSnapshotCacheIsExact},
		{"AgentAllowsCommand", testAgentAllowsCommand},
		{"KernelServicePorts", testKernelServicePorts},
		{"Devices", testDevices},
		{"ConcurrentDeviceAppliers", testConcurrentDeviceAppliers},
		{"AgentCapacity", testAgentCapacity},
		{"NoteWaitingKernels", testNoteWaitingKernels},
		{"SessionRoundTrip", testSessionRoundTrip},
		{"ListSessionsAndKernels", testListSessionsAndKernels},
		{"CreateSessionErrors", testCreateSessionErrors},
		{"PendingLimit", testPendingLimit},
		{"DrainRefusesSubmits", testDrainRefusesSubmits},
		{"SessionSpecs", testSessionSpecs},
		{"ListSessionsPages", testListSessionsPages},
		{"ListSessionsFilters", testListSessionsFilters},
		{"SessionNames", testSessionNames},
		{"Arrays", testArrays},
		{"ArrayRefusals", testArrayRefusals},
		{"AvoidAgents", testAvoidAgents},
		{"Users", testUsers},
		{"Policies", testPolicies},
		{"LoadSnapshot", testLoadSnapshot},
		{"ApplyPlan", testApplyPlan},
		{"ApplyPlanGuards", testApplyPlanGuards},
		{"ApplyPlanSeesEarlierPlacements", testApplyPlanSeesEarlierPlacements},
		{"ApplyPlanErrors", testApplyPlanErrors},
		{"TransitionSessions", testTransitionSessions},
		{"MoveSessions", testMoveSessions},
		{"ReleaseOnce", testReleaseOnce},
		{"KernelsAheadStay", testKernelsAheadStay},
		{"Outcome", testOutcome},
		{"TimeLimits", testTimeLimits},
		{"SnapshotHoldings", testSnapshotHoldings},
		{"Preemption", testPreemption},
		{"UpdateKernel", testUpdateKernel},
		{"History", testHistory},
		{"Tries", testTries},
		{"SessionsMatching", testSessionsMatching},
		{"RegistryGrowth", testRegistryGrowth},
		{"Reopen", testReopen},
		{"CorruptRows", testCorruptRows},
		{"ConcurrentAppliers", testConcurrentAppliers},
		{"AbortedApply", testAbortedApply},
		{"Changes", testChanges},
		{"ChangesConcurrent", testChangesConcurrent},
		{"PruneChanges", testPruneChanges},
		{"UtilisationSampling", testUtilisationSampling},
		{"UtilisationRange", testUtilisationRange},
		{"UtilisationDownsampling", testUtilisationDownsampling},
		{"PruneUtilisation", testPruneUtilisation},
		{"UsageRollup", testUsageRollup},
		{"UsageRollupStartsFromNow", testUsageRollupStartsFromNow},
		{"UsageRollupStartRace", testUsageRollupStartRace},
		{"UsageRollupOutlivesPrune", testUsageRollupOutlivesPrune},
		{"FairShareSnapshot", testFairShareSnapshot},
		{"DecayedUsageCache", testDecayedUsageCache},
		{"UsageRollupConcurrent", testUsageRollupConcurrent},
		{"HeldByUser", testHeldByUser},
		{"AgentDrains", testAgentDrains},
		{"Jobs", testJobs},
		{"ClusterCA", testClusterCA},
		{"CARotation", testCARotation},
		{"JoinTokens", testJoinTokens},
		{"AgentCertificates", testAgentCertificates},
		{"ConcurrentJoins", testConcurrentJoins},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, e)
		})
	}
}

// base is the suite's clock origin. Times carry microseconds, the precision
// both engines keep.
var base = time.Date(2025, 1, 16, 9, 30, 0, 123456000, time.UTC)

func at(seconds int) time.Time { return base.Add(time.Duration(seconds) * time.Second) }
