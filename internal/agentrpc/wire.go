package agentrpc

import "github.com/sokovan-go/sokovan/internal/domain"

// Register is an agent announcing itself, at start and after the manager
// forgot it. Kernels lists what it runs now, so the manager can settle
// what died with an earlier incarnation.
type Register struct {
	ID            domain.AgentID `json:"id"`
	ResourceGroup string         `json:"resource_group"`
	Address       string         `json:"address"`
	// KernelAddress is where the agent's kernels bind and their peers
	// reach them; agents of earlier releases leave it out.
	KernelAddress string            `json:"kernel_address,omitempty"`
	Architecture  string            `json:"architecture"`
	Runtime       string            `json:"runtime"`
	Capacity      map[string]string `json:"capacity"`
	MaxKernels    int               `json:"max_kernels,omitempty"`
	Images        []string          `json:"images,omitempty"`
	// Catalog is every image the runtime can run (domain.Agent.Catalog);
	// absent for runtimes that pull from registries.
	Catalog []string       `json:"catalog,omitempty"`
	Kernels []KernelReport `json:"kernels"`
	// AllowsCommand: the agent runs a session's own command. Agents of
	// earlier releases leave it out and count as not allowing.
	AllowsCommand bool `json:"allows_command,omitempty"`
	// Waiting are kernels created but not started yet; they are the
	// agent's, so a restart does not count them lost.
	Waiting []WaitingKernel `json:"waiting,omitempty"`
	// Devices are the accelerators the agent hands out one by one; its
	// capacity of their slots must be what they add up to. Agents of
	// earlier releases leave it out and are placed by count only.
	Devices []domain.Device `json:"devices,omitempty"`
}

// Registered answers Register: the agent's new epoch, which fences what
// earlier incarnations send, and kernels it must destroy.
type Registered struct {
	Epoch   int64             `json:"epoch"`
	Destroy []domain.KernelID `json:"destroy"`
}

// Heartbeat is an agent's periodic sign of life, with its kernels so a
// lost event is made good.
type Heartbeat struct {
	ID      domain.AgentID `json:"id"`
	Epoch   int64          `json:"epoch"`
	Images  []string       `json:"images,omitempty"`
	Kernels []KernelReport `json:"kernels"`
	// Capacity, when set, is what the agent offers now; runtimes whose
	// capacity changes (a SLURM partition) send it, and the manager keeps
	// it when it differs. Managers of earlier releases ignore it.
	Capacity map[string]string `json:"capacity,omitempty"`
	// Waiting are kernels created but not started yet, with why they wait.
	Waiting []WaitingKernel `json:"waiting,omitempty"`
}

// WaitingKernel is a kernel the agent has taken but whose start waits on
// something outside it, such as a SLURM queue. It is a separate list, not
// a KernelReport, since a manager of an earlier release would read a
// report that is not running as an exit.
type WaitingKernel struct {
	ID domain.KernelID `json:"id"`
	// Note says why, for people: "queued in SLURM: Resources".
	Note string `json:"note,omitempty"`
}

// HeartbeatReply lists kernels to destroy; Reregister asks the agent to
// register again (the manager has a newer epoch or none for it).
type HeartbeatReply struct {
	Destroy    []domain.KernelID `json:"destroy"`
	Reregister bool              `json:"reregister,omitempty"`
	// Renew asks the agent to renew its certificate now: it is of a
	// cluster CA being rotated out.
	Renew bool `json:"renew,omitempty"`
	// Trusted are the fingerprints of the CAs the manager trusts now. An
	// agent that trusts another renews now, for the renewal's answer
	// carries the CAs to trust: once a rotation finishes, agents stop
	// trusting managers of the old CA within a heartbeat, not at their
	// next renewal.
	Trusted []string `json:"trusted,omitempty"`
}

// KernelReport is one kernel the agent has.
type KernelReport struct {
	ID       domain.KernelID `json:"id"`
	Running  bool            `json:"running"`
	ExitCode *int            `json:"exit_code,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	// ServicePorts are what a running kernel serves (as on its
	// kernel_started event), for a manager that missed that event.
	ServicePorts []domain.ServicePort `json:"service_ports,omitempty"`
	// Agents of earlier releases may add "ready" and "probes" (readiness
	// probes nobody sent them); the decoder ignores both.
}

// Events carries agent events in the order they happened. The agent and
// epoch travel once for the batch; the manager fills them into each event
// (Stamp) before judging it.
type Events struct {
	ID     domain.AgentID       `json:"id"`
	Epoch  int64                `json:"epoch"`
	Events []domain.KernelEvent `json:"events"`
}

// Stamp returns the batch's events with its agent and epoch filled in.
func (e Events) Stamp() []domain.KernelEvent {
	out := make([]domain.KernelEvent, len(e.Events))
	for i, ev := range e.Events {
		ev.Agent, ev.Epoch = e.ID, e.Epoch
		out[i] = ev
	}
	return out
}

// CheckAndPull asks an agent to make images present.
type CheckAndPull struct {
	Images []string `json:"images"`
}

// PullStates answers CheckAndPull per image.
type PullStates struct {
	Images map[string]PullState `json:"images"`
}

// PullState is one image on one agent.
type PullState struct {
	Ready  bool   `json:"ready,omitempty"`
	Failed string `json:"failed,omitempty"`
}

// CreateKernels asks an agent to start kernels.
type CreateKernels struct {
	Kernels []KernelSpec `json:"kernels"`
	// PerKernel says the caller reads a Created answer: the agent starts
	// what it can and names each kernel it did not start. Without it (a
	// manager of an earlier release) one refused kernel refuses the call.
	PerKernel bool `json:"per_kernel,omitempty"`
}

// Created answers a CreateKernels with PerKernel: the kernels not started
// and why; every other kernel of the call was started.
type Created struct {
	Failed []KernelFailure `json:"failed"`
}

// KernelFailure is one kernel an agent did not start. Code is
// CodeInvalidSpec when it can never start as specified.
type KernelFailure struct {
	Kernel domain.KernelID `json:"kernel"`
	Error  string          `json:"error"`
	Code   string          `json:"code,omitempty"`
}

// KernelSpec is one kernel to start: the coordinator's domain.KernelSpec
// with what the wire holds in a form of its own. Embedded, its fields
// encode at the top level, as they did when this type listed them.
type KernelSpec struct {
	domain.KernelSpec
	// Slots are the kernel's requested resources by slot name, formatted
	// with the manager's registry and parsed with the agent's.
	Slots map[string]string `json:"slots"`
	// ClusterAddrs are where the kernels named in ClusterHosts are
	// reached, in the same order: the host of each one's agent, so kernels
	// on different hosts find each other. An older manager leaves it out.
	ClusterAddrs []string `json:"cluster_addrs,omitempty"`
	// TimeLimitMS is the session's time limit in milliseconds (0: none).
	// The manager enforces it; a runtime with a scheduler of its own
	// (SLURM) hands it on so the job is also bounded there.
	TimeLimitMS int64 `json:"time_limit_ms,omitempty"`
}

// DestroyKernel asks an agent to stop a kernel and answers once it has.
type DestroyKernel struct {
	Kernel domain.KernelID `json:"kernel"`
	Forced bool            `json:"forced"`
}

// Error is the body of a failed call. Code, when set, says what kind of
// refusal it is, for the caller to branch on; peers of earlier releases
// ignore it and see a plain 4xx.
type Error struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
}

// CodeInvalidSpec: the agent refused kernels it can never start as
// specified (create_kernels, answered 400).
const CodeInvalidSpec = "invalid_spec"

// Join asks the manager for a certificate naming ID for the key of CSR
// (PEM), with a bootstrap token an admin created; it is the one agent
// call that needs neither the agent token nor a certificate.
type Join struct {
	Token string         `json:"token"`
	ID    domain.AgentID `json:"id"`
	CSR   string         `json:"csr"`
}

// Renew asks for a new certificate for the key of CSR, naming whoever
// the client certificate of the call names.
type Renew struct {
	CSR string `json:"csr"`
}

// Certificate answers Join and Renew: the agent's certificate and the
// cluster CA's, in PEM; during a CA rotation CA holds both the new CA and
// the old, which the agent trusts managers with from then on.
type Certificate struct {
	Certificate string `json:"certificate"`
	CA          string `json:"ca"`
}
