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
// kernel's group, told each kernel's process group and cgroups as it starts
// and forgotten once reaped. When its pipe from the agent breaks without a
// clean Close, it kills every group and cgroup it still knows, so nothing a
// kernel started outlives a kill -9 of the agent. Linux sends the parent-
// death signal when the OS thread that forked the kernel exits, which in Go
// happens only if a goroutine locked to that thread ends without unlocking
// it; code in the agent must not do that.
//
// A process's exit is observed through a pidfd parked on the Go runtime's
// poller, so a waiting kernel holds no OS thread (a blocking waitid per
// kernel cost one thread each, and Go aborts past 10,000); then with
// waitid(WNOWAIT), before it is reaped: while the exited main process is a
// zombie its pid cannot be reused, so the runtime can still SIGKILL what is
// left of its group and cgroup, and no signal ever reaches a stranger that
// inherited the number.
//
// # The start gate and the kernel's user
//
// Every kernel starts as the gate: Config.GateExe (the agent's own binary)
// run with GateArg and the operator's BaseEnv only. The gate waits on a pipe
// while the runtime moves it into the kernel's cgroups (so a fast program
// cannot allocate or fork past its limits first), then reads its order: the
// program, its argv and its environment. The user's environment therefore
// reaches only the program's execve, never a shell or loader of the
// runtime's own; names those would read (PATH, LD_*, BASH_ENV, SOKOVAN_*, …,
// see domain.CheckUserEnvName) are refused by the manager at submit and by
// Spec.Validate here.
//
// When the agent is root, the gate then drops to a user id of the kernel's
// own from Config.KernelUIDs (group id the same number, no supplementary
// groups), so a kernel can signal or trace neither another kernel nor the
// agent, and owns only its work directory. Dropping privileges clears the
// parent-death signal, so the gate sets it again and checks the agent is
// still its parent before it execs. A program the kernel's user cannot reach
// by path is exec'd through a descriptor opened while still root. A second
// pipe, closed by the exec, tells Create whether the program started. Each
// kernel has a pids cap (Config.Cgroups.PidsMax, DefaultPidsMax) where the
// pids controller is usable. Kernels do not get a pid namespace of their
// own: the program would be its pid 1, which ignores SIGTERM without a
// handler and must reap orphans, so it would need an init process per
// kernel; distinct uids already keep kernels from signalling each other.
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
// Each kernel gets a cgroup named by its id in every usable hierarchy,
// joined by the gate before the program runs (cgroup v1 offers no way to
// start a process inside a cgroup; the gate's exec keeps the pid, so the
// membership holds). After the main process exits, every process left in
// the cgroup is killed, the OOM counter is read, and the cgroup is removed
// before the exit event is sent.
//
// # Imports
//
// It may import internal/agent/runtime, internal/domain, the standard
// library, golang.org/x/sys/unix and golang.org/x/net/websocket (for
// http-echo's websocket echo); nothing from the scheduler, the store
// or the coordinator.
package process
