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
// Two limits of that: the signal goes to the kernel's main process only (its
// own children are reaped by the cgroup sweep described below, when there
// are cgroups), and Linux sends it when the OS thread that forked the
// kernel exits, which in Go happens only if a goroutine locked to that
// thread ends without unlocking it; code in the agent must not do that.
//
// A process's exit is observed with waitid(WNOWAIT) before it is reaped:
// while the exited main process is a zombie its pid cannot be reused, so the
// runtime can still SIGKILL what is left of its group and cgroup, and no
// signal ever reaches a stranger that inherited the number.
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
// Each kernel gets a cgroup named by its id in every usable hierarchy. It
// must be in it before its program runs, or a fast program could allocate or
// fork past its limits first. Cgroup v1 offers no way to start a process
// inside a cgroup, so with cgroups the kernel starts as a small shell gate
// (Config.Cgroups.Shell) that waits on a pipe; the runtime writes the gate's
// pid into the cgroups, then releases it, and the gate execs the program
// (same pid, so the membership holds). After the main process exits, every
// process left in the cgroup is killed, the OOM counter is read, and the
// cgroup is removed before the exit event is sent.
//
// # Imports
//
// It may import internal/agent/runtime, internal/domain, the standard
// library and golang.org/x/sys/unix; nothing from the scheduler, the store
// or the coordinator.
package process
