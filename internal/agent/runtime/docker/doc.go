// Package docker is the runtime that runs each kernel as a container on a
// Docker engine reached through the Engine API (github.com/moby/moby/client),
// for agents on hosts where an engine runs beside the agent.
//
// It owns the kernels' containers (created, started, watched, stopped and
// removed through the engine), the labels that tie a container to its agent
// and kernel, the cluster SSH keys of multi-kernel sessions, and each
// kernel's directory under Config.DataDir (the bind-mounted SSH files, and
// the tail of the output kept after Destroy).
//
// # Containers
//
// A kernel is one container named "sokovan-<agent id>-<kernel id>". The
// agent id is part of the name because several agents may share an engine
// (dev mode's local agents, or a kernel requeued to another agent while a
// stale container of it survives), and a kernel id is only unique among
// live kernels of a cluster, not among every container an engine holds.
// Labels record the facts a restarted agent needs to take its kernels back:
// sokovan.agent, sokovan.kernel, sokovan.session, sokovan.role,
// sokovan.idx, sokovan.image and, for a kernel that reports a service
// port, sokovan.port. Recover lists the containers labelled with the
// agent's id and adopts them; Create and Destroy also find a container by
// its name when the kernel is not in memory, so both stay idempotent
// across a restart that did not call Recover.
//
// Limits come from the spec's slots: "cpu" becomes NanoCPUs (a CFS quota),
// "mem" the memory limit, with swap capped at the same figure so that the
// limit is the kernel's and the OOM killer, not the swap device, enforces
// it; "pids" (or Config.PidsMax) the pids limit. The network mode is
// Config.NetworkMode, "none" by default: kernels reach nothing unless the
// agent is configured otherwise. In any other mode a multi-node kernel's
// hosts file names its peers (ExtraHosts, "sub1:ADDR" from
// Spec.ClusterAddrs), so it reaches them on their hosts by cluster
// hostname.
//
// # Service ports
//
// A kernel given a port (Spec.Port, as a deployment's routes are) is told
// SOKOVAN_PORT and SOKOVAN_BIND_HOST (Spec.BindHost, 127.0.0.1 when empty),
// as every runtime tells its kernels. Ports are never published:
// publishing needs a bridge network, which the agents this runtime was
// built for do not have. So only in the host's network (NetworkMode
// "host", the agent's --docker-network host) does a kernel listening there
// serve on the host's own address, and only then does it report the port,
// on kernel_started and in Live, exactly as the process runtime does (name
// and protocol "http", the bind host and the port), for the session proxy,
// deployments and their health checks. In any other mode it reports no
// port, since what listens at that address on the host is not the kernel;
// a deployment on such an agent fails its routes ("serves no port"). The
// port is also kept in the sokovan.port label (HOST:PORT), so a restarted
// agent reports it again for a running container it takes back. In the
// host's network kernels share the host's ports and interfaces with each
// other and with the agent: the port is the agent's to choose (a free one
// for a serving image), and nothing keeps a kernel from binding others.
//
// GPUs are the spec's grants: an "nvidia" device request of exactly those
// (by UUID where the driver reported one) and NVIDIA_VISIBLE_DEVICES naming
// the same. A kernel granted none gets NVIDIA_VISIBLE_DEVICES=void, so that
// neither an engine whose default runtime is nvidia nor an image that asks
// for "all" hands it a GPU the scheduler did not grant.
//
// # Exits
//
// A watcher goroutine per running kernel waits on the engine
// (ContainerWait, condition not-running), then inspects the container for
// its exit code, OOM flag and finish time, and emits kernel_terminated. The
// engine reports a death by signal as 128 plus the signal number, the same
// convention KernelState documents, so codes 129 to 192 are reported as
// signal deaths (a program that exits with such a code on its own is
// indistinguishable from one, as it is to a shell). Reasons: "destroyed"
// when Destroy or Close stopped the kernel, "oom-killed" when the engine
// says the OOM killer ended it, "killed by signal" and "exited" otherwise.
//
// # Pulls
//
// Pull asks the engine to pull from the image's registry unless the engine
// already holds the image (a tag already present is not refreshed). A
// failure that retrying cannot mend (no such repository or tag, access
// refused, malformed reference) matches runtime.ErrUnknownImage; any other
// (registry unreachable, engine errors, a cancelled context) matches
// runtime.ErrPullFailed, so the manager may try again. Both are *PullError,
// whose message names the image, the cause and the engine's own words.
//
// # Imports
//
// It may import internal/agent/runtime, internal/domain, the standard
// library, the moby Engine API client and types, containerd's errdefs (the
// client's error classes), distribution/reference (image reference
// syntax), golang.org/x/crypto/ssh and golang.org/x/sys/unix; nothing from
// the scheduler, the store or the coordinator. Its tests take their engine
// and images from dockertest, which builds images of testdata/kernel and
// serves them from a registry in the test process (go-containerregistry).
//
// Imports: internal/agent/runtime, internal/domain,
// github.com/moby/moby/api/..., github.com/moby/moby/client/...,
// github.com/containerd/errdefs/..., github.com/distribution/reference/...,
// golang.org/x/crypto/ssh/..., golang.org/x/sys/unix.
// Never links: internal/coordinator/..., internal/scheduler/...,
// internal/store/..., internal/kernelstate/..., internal/agentgw/....
package docker
