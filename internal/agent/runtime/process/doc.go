// Package process is the runtime that runs each kernel as a real OS process
// on the agent's host: dev mode's runtime, and the one the end-to-end tests
// drive.
//
// It owns the image Catalog (which image names exist and what command each
// runs, with DefaultCatalog's sleep, exit:N and http-echo), the http-echo
// server that runs in a re-executed child (ServeHTTPEcho, RunChild and the
// HTTPEchoArg argv contract), the kernels' processes, their log files under
// Config.DataDir, and their cgroups.
//
// # Processes
//
// A kernel is a process in its own process group, started with its working
// directory, stdout and stderr under DataDir/<kernel id>/. Destroy signals
// the whole group. Each process is started with Pdeathsig SIGKILL, so when
// the agent dies its kernels die with it instead of running on unowned.
// That signal reaches a kernel's main process only, so each runtime also
// keeps a watchdog (WatchdogArg): a process of its own, outside every
// kernel's group, told each kernel's cgroups before its process starts and
// its process group once it has, and forgotten once reaped. When its pipe
// from the agent breaks without a clean Close, it kills every group and
// cgroup it still knows, so nothing a kernel started outlives a kill -9 of
// the agent. (Without cgroups, a process that leaves its group escapes it,
// as can one the program forks in the instant between its start and the
// watchdog learning the group, should the agent die just then.) Linux
// sends the parent-death signal when the OS thread that forked the kernel
// exits, which in Go happens only if a goroutine locked to that thread ends
// without unlocking it; code in the agent must not do that, and the
// runtime's own forking thread (see Cgroups) never does.
//
// A process's exit is observed through a pidfd parked on the Go runtime's
// poller, so a waiting kernel holds no OS thread (a blocking waitid per
// kernel cost one thread each, and Go aborts past 10,000); then with
// waitid(WNOWAIT), before it is reaped: while the exited main process is a
// zombie its pid cannot be reused, so the runtime can still SIGKILL what is
// left of its group and cgroup, and no signal ever reaches a stranger that
// inherited the number.
//
// # Starting a kernel, and the kernel's user
//
// A kernel's program is started directly, a fork and an exec with nothing
// of the runtime's in between: the kernel's environment is handed to the
// program's execve and read by nothing of the runtime's before it. Names
// the program's own loader or shell would act on before any code of the
// user's runs (PATH, LD_*, BASH_ENV, SOKOVAN_*, …, see
// domain.CheckUserEnvName) are refused by the manager at submit and by
// Spec.Validate here. Create returns once the program runs.
//
// When the agent is root, the child takes a user id of the kernel's own
// from Config.KernelUIDs (group id the same number, no supplementary
// groups) before the exec, so a kernel can signal or trace neither another
// kernel nor the agent, and owns only its work directory. Taking the uid
// clears the parent-death signal; Go's child sets it afterwards and then
// checks the agent is still its parent (syscall/exec_linux.go). The kernel's
// user may not pass through the agent's directories above the work
// directory, so the child enters it through a descriptor the runtime opened
// (its /proc/self/fd link), and a program that user cannot reach by path
// (a binary under a private directory, as a test binary is) is started
// again through such a descriptor, where only the file's own execute bit
// counts. Both descriptors close on exec. Each kernel has a pids cap
// (Config.Cgroups.PidsMax, DefaultPidsMax) where the pids controller is
// usable. Kernels do not get a pid namespace of their own: the program
// would be its pid 1, which ignores SIGTERM without a handler and must reap
// orphans, so it would need an init process per kernel; distinct uids
// already keep kernels from signalling each other.
//
// Exit codes are the process's; a death by signal reports 128+signal with
// the signal named in the message. The reason is "destroyed" when Destroy
// or Close ended it, "oom-killed" when the cgroup's OOM killer fired,
// "killed by signal" for other signal deaths and "exited" otherwise.
//
// # Cgroups
//
// Memory ("mem" bytes), CPU ("cpu" cores, as a CFS quota over a 100 ms
// period) and process count ("pids", or Config.Cgroups.PidsMax) are enforced
// through cgroups where the machine allows it. At New, for each controller,
// the runtime looks for a cgroup v1 hierarchy carrying it, then for the v2
// unified hierarchy offering it, and creates Config.Cgroups.Name under the
// agent's own cgroup there; whatever an earlier run left in it is killed and
// removed. A controller that cannot be used is reported by Enforcement with
// the reason, and kernels run without that limit: Create never fails
// because a limit cannot be enforced.
//
// Each kernel gets a cgroup named by its id in every usable hierarchy, and
// its process is born in it, so not one instruction of it runs outside its
// limits. A v2 cgroup is handed to clone (CLONE_INTO_CGROUP, Linux 5.7; New
// checks the machine has it, and reports v2 controllers unusable where it
// does not). cgroup v1 has no such call, but a child is born in the cgroups
// of the thread that forks it, and v1 lets one thread change cgroups alone:
// the runtime forks from an OS thread, locked to its goroutine, that joins
// the kernel's v1 cgroups first and, once back in its own, returns to Go's
// pool. It is never the main thread, which owns the agent's memory (v1
// would charge the agent's pages to the kernel), and it never exits, which
// would send the kernel its parent-death signal: should it fail to get
// home, it stays locked and asleep, retrying, rather than run the agent's
// goroutines inside a kernel's cgroup (and killing a kernel's cgroup never
// signals the agent). While there it counts as one of the kernel's
// processes, so the v1 pids cap is one higher until the kernel has forked.
// After the main process exits, every process left in the cgroup is killed,
// the OOM counter is read, and the cgroup is removed before the exit event
// is sent.
//
// # Imports
//
// It may import internal/agent/runtime, internal/domain, the standard
// library, golang.org/x/sys/unix and golang.org/x/net/websocket (for
// http-echo's websocket echo); nothing from the scheduler, the store
// or the coordinator.
//
// Imports: internal/agent/runtime, internal/domain, golang.org/x/sys/unix,
// golang.org/x/net/websocket.
// Never links: internal/coordinator/..., internal/scheduler/...,
// internal/store/..., internal/kernelstate/..., internal/agentgw/....
package process
