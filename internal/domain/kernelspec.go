package domain

// KernelSpec is what an agent is told of one kernel to start, as the
// coordinator decides it and the agent wire carries it: one type for both
// ends, so the manager's side of the wire copies nothing field by field.
// What each end holds in its own form — the requested slots (a Vec at the
// manager, slot names and quantities on the wire), the time limit, where
// the other kernels run — each adds beside it, converted only at the wire.
// The JSON names are the wire's and must not change: agents and managers
// of neighbouring releases read each other's specs.
type KernelSpec struct {
	Kernel  KernelID  `json:"kernel"`
	Session SessionID `json:"session"`
	Image   string    `json:"image"`
	// ClusterRole is "main" or "sub"; ClusterHosts names every kernel of
	// the session by cluster index.
	ClusterRole  string   `json:"cluster_role"`
	ClusterIdx   int      `json:"cluster_idx"`
	ClusterSize  int      `json:"cluster_size"`
	ClusterHosts []string `json:"cluster_hosts"`
	// Command and Env are the session's own.
	Command []string          `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Devices are the devices placement granted the kernel; the runtime
	// exposes exactly these. The manager's record is the source of truth:
	// they are sent again with every create, so a restarted agent needs no
	// memory of its own.
	Devices []DeviceGrant `json:"devices,omitempty"`
	// Serves is the session type's word (hook.Start) that the kernel
	// serves HTTP (an inference session's, a deployment's route): the agent
	// gives it a free port of its host unless its environment names one in
	// PORT. An older manager never sets it; its agents then give ports only
	// to http-* images, as before.
	Serves bool `json:"serves,omitempty"`
}
