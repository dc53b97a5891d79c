package coordinator

import (
	"context"
	"errors"
	"time"

	"github.com/sokovan-go/sokovan/internal/clock"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Store is what the coordinator needs from persistence: the session
// lifecycle, the scheduling round and the change feed whole, and a few
// reads and writes of groups, agents and jobs. Every method is one guarded
// transaction; store/sqlite and store/postgres provide it.
type Store interface {
	store.Sessions
	store.Scheduling
	store.Feed
	ListResourceGroups(ctx context.Context) ([]domain.ResourceGroup, error)
	ListAgents(ctx context.Context, f store.AgentFilter) ([]domain.Agent, error)
	GetAgent(ctx context.Context, id domain.AgentID) (domain.Agent, error)
	SetAgentStatus(ctx context.Context, id domain.AgentID, status domain.AgentStatus) error
	ListAgentDrains(ctx context.Context) ([]domain.AgentDrain, error)
	GetJob(ctx context.Context, id domain.JobID) (domain.Job, error)
	JobMembers(ctx context.Context, id domain.JobID) ([]domain.Session, error)
	LiveJobs(ctx context.Context) ([]store.JobWithMembers, error)
	MoveJob(ctx context.Context, e domain.JobHistoryEntry) error
	RollupUsage(ctx context.Context, now time.Time) (store.RollupResult, error)
	PruneUsage(ctx context.Context, before time.Time) (int64, error)
}

// ErrImpossible marks an agent call that failed in a way no retry can fix:
// the agent refused the kernels' spec as one it can never start. Agents
// implementations wrap it; StartSessions then cancels the session at once
// with the agent's reason instead of spending its retries.
var ErrImpossible = errors.New("impossible")

// Agents is how handlers reach agents. Implementations carry the RPC; a
// call that errors or times out is a failed attempt, and one whose error
// matches ErrImpossible a final one.
type Agents interface {
	// CheckAndPull makes the images present on the agent, starting pulls
	// as needed, and says per image where it stands. Asking again is safe.
	CheckAndPull(ctx context.Context, agent domain.AgentID, images []string) (map[string]PullState, error)
	// CreateKernels starts kernels; creating one that exists is a no-op.
	// Kernels the agent refuses as invalid fail with ErrImpossible.
	CreateKernels(ctx context.Context, agent domain.AgentID, specs []KernelSpec) error
	// DestroyKernel returns once the kernel has stopped or was already gone.
	DestroyKernel(ctx context.Context, agent domain.AgentID, kernel domain.KernelID, forced bool) error
}

// PullState is where one image stands on one agent.
type PullState struct {
	// Ready: the image is present.
	Ready bool
	// Failed, when not empty, is why the agent's last pull of it failed.
	Failed string
}

// KernelSpec is what an agent needs to start one kernel: the spec the
// wire carries as it is, and what the port turns into the wire's form.
type KernelSpec struct {
	domain.KernelSpec
	// Slots are the kernel's requested resources; the port formats them.
	Slots domain.Vec
	// ClusterAgents are the agents the kernels named in ClusterHosts are
	// placed on, same order, so the port can tell each kernel where the
	// others are reached.
	ClusterAgents []domain.AgentID
	// TimeLimit is the session's, from its type's OnStart hook (0: none);
	// a runtime with its own enforcement (SLURM's --time) uses it as a
	// backstop behind the coordinator's.
	TimeLimit time.Duration
}

// Clock tells the time (package clock's); tests inject one they move by
// hand.
type Clock = clock.Clock
