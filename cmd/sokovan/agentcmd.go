package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/devices"
	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/docker"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/slurm"
	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// newAgentDaemonCmd is `sokovan agent run`: the agent daemon.
// settleAgentConfig fills what the agent's flags leave to the
// environment and the network: the token, the id (the host name), the
// addresses (agent.ResolveAddresses) and whether its runtime runs a
// session's own command.
func settleAgentConfig(cfg *agent.Config, id, kind string, slurmAllow, withIdentity bool) error {
	if cfg.Token == "" {
		cfg.Token = os.Getenv("SOKOVAN_AGENT_TOKEN")
	}
	if cfg.Token == "" && !withIdentity {
		return errors.New("--token (or SOKOVAN_AGENT_TOKEN) is required, or --join-token to join with a certificate")
	}
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return err
		}
		id = host
	}
	cfg.ID = domain.AgentID(id)
	addrs, err := agent.ResolveAddresses(cfg.Manager, agent.Addresses{Listen: cfg.Listen,
		Advertise: cfg.Advertise, Kernel: cfg.KernelAddress})
	if err != nil {
		return err
	}
	cfg.Listen, cfg.Advertise, cfg.KernelAddress = addrs.Listen, addrs.Advertise, addrs.Kernel
	if withIdentity {
		// The RPC server serves TLS to managers' certificates only.
		cfg.Advertise = strings.Replace(cfg.Advertise, "http://", "https://", 1)
	}
	switch kind {
	case "docker", "sim":
		// A container's command runs inside the container, and the
		// sim runs nothing: both take any command.
		cfg.AllowsCommand = true
	case "slurm":
		// A job runs as the agent's user, so only the slurm flag opens
		// it: the manager places a session's command on an agent that
		// says so, and a runtime that then refuses it cancels the session.
		cfg.AllowsCommand = slurmAllow
	}
	return nil
}

// agentTrust sets up how the agent trusts its managers and proves who it
// is. One pool, from --ca (or SOKOVAN_CA): an https:// manager's
// certificate with the shared token, and the cluster CA a joining agent
// checks the managers with. With an identity the agent joins the
// cluster, or loads what it joined with before, and from then on trusts
// the cluster CA it was handed.
func agentTrust(cmd *cobra.Command, cfg *agent.Config, withIdentity bool, managerCA, joinToken, identityDir string) (err error) {
	file := caFile(cmd, "")
	if file == "" {
		file = managerCA // the deprecated --manager-ca, the same thing
	}
	if cfg.ManagerCAs, err = caPool(file); err != nil {
		return err
	}
	if withIdentity {
		if cfg.Identity, err = agent.JoinCluster(cmd.Context(), cfg.Manager, cfg.ManagerCAs, cfg.ID, joinToken, identityDir); err != nil {
			return err
		}
	}
	return nil
}

// agentDaemonFlags are `agent run`'s flags.
type agentDaemonFlags struct {
	cfg                                                                         agent.Config
	id, kind, dataDir, cpu, mem, dockerHost, dockerNetwork, kernelUIDs, devSpec string
	asAgentUser                                                                 bool
	joinToken, identityDir, managerCA                                           string
	sl                                                                          slurm.Config
}

func newAgentDaemonCmd() *cobra.Command {
	var df agentDaemonFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run an agent daemon that registers with a manager",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return df.run(cmd)
		},
	}
	df.register(cmd.Flags())
	return cmd
}

func (df *agentDaemonFlags) register(f *pflag.FlagSet) {
	cfg, sl := &df.cfg, &df.sl
	f.StringVar(&cfg.Manager, "manager", "http://127.0.0.1:8470", "manager URL (several, comma-separated, to fail over)")
	f.DurationVar(&cfg.HeartbeatInterval, "heartbeat", 5*time.Second, "heartbeat interval")
	f.DurationVar(&cfg.ManagerTimeout, "manager-timeout", agentrpc.DefaultCallTimeout, "how long one call waits for a manager before the next is tried; keep it times the number of managers under their --heartbeat-timeout")
	f.StringVar(&cfg.Token, "token", "", "shared agent token (or SOKOVAN_AGENT_TOKEN), for managers run with --insecure-shared-agent-token: the insecure dev mode, in which anyone holding it may speak for any agent")
	f.StringVar(&df.joinToken, "join-token", "", "join token (sokovan agent token create; or SOKOVAN_JOIN_TOKEN): join once for a certificate naming --id, "+
		"kept in --identity-dir and used from then on; the managers are checked with the cluster CA given with --ca. Also rejoins an agent whose certificate expired")
	f.StringVar(&df.identityDir, "identity-dir", "", "where the agent's key and certificate live (default: DATA-DIR/identity)")
	f.StringVar(&df.managerCA, "manager-ca", "", "the same as --ca")
	_ = f.MarkDeprecated("manager-ca", "use --ca (or SOKOVAN_CA): one CA file is trusted for managers, joining included")
	f.StringVar(&cfg.ResourceGroup, "resource-group", "default", "resource group to join")
	f.StringVar(&df.kind, "runtime", "process", "runtime: process, docker, slurm or sim")
	f.StringVar(&df.dockerHost, "docker-host", "", "Docker engine address (default: DOCKER_HOST or the local socket)")
	f.StringVar(&df.dockerNetwork, "docker-network", "none", "docker runtime: kernels' network mode; host lets serving kernels (deployments) be reached on their port, none cuts them off")
	f.StringVar(&df.id, "id", "", "agent id (default: the host name)")
	f.StringVar(&cfg.Listen, "listen", "", "RPC listen address (default: the address of the interface that reaches the manager, port 6001)")
	f.StringVar(&cfg.Advertise, "advertise", "", "URL the manager calls (default: http://LISTEN; for a wildcard LISTEN, the address of the interface that reaches the manager)")
	f.StringVar(&cfg.KernelAddress, "kernel-address", "", "address kernels' service ports bind and the manager dials them at (default: the advertised host if an IP address, else the address of the interface that reaches the manager)")
	f.StringVar(&df.dataDir, "data-dir", "./sokovan-agent", "kernel logs and work directories")
	f.StringVar(&df.cpu, "cpu", "", "cpu to offer (default: detected)")
	f.StringVar(&df.mem, "mem", "", "memory to offer, e.g. 16g (default: detected)")
	f.StringVar(&df.devSpec, "devices", "auto", "accelerators handed out one by one: auto (NVML's GPUs where a driver is present, else none), nvml, nvml:cuda.shares (GPUs shared by fraction), none, or fakes for tests such as cuda:4 or cuda.shares:2")
	f.IntVar(&cfg.MaxKernels, "max-kernels", agent.DefaultMaxKernels, "cap on kernels placed here (-1: none)")
	f.StringVar(&df.kernelUIDs, "kernel-uids", "", "process runtime as root: user ids kernels run as, FIRST-LAST, one per kernel (default 2000000000-2000065535)")
	f.BoolVar(&cfg.AllowsCommand, "allow-command", false, "process runtime: run a session's own command (create -- CMD) instead of only its image's; anyone who may submit then runs any program as the kernel's user")
	f.BoolVar(&df.asAgentUser, "run-as-agent-user", false, "process runtime: run kernels as the agent's own user even when that is root (trusted machines only)")
	f.StringVar(&sl.Partition, "slurm-partition", "", "slurm runtime: partition jobs are submitted to (required)")
	f.StringVar(&sl.Account, "slurm-account", "", "slurm runtime: sbatch --account")
	f.StringVar(&sl.WorkDir, "slurm-workdir", "", "slurm runtime: job scripts, outputs and status files, on a file system the compute nodes share (default: DATA-DIR/slurm)")
	f.DurationVar(&sl.PollInterval, "slurm-poll", 2*time.Second, "slurm runtime: how often one squeue call polls every job")
	f.DurationVar(&sl.TimeLimit, "slurm-time", 0, "slurm runtime: sbatch --time for jobs whose session has no time limit (0: the partition's default)")
	f.BoolVar(&sl.AllowCommand, "slurm-allow-command", false, "slurm runtime: let a session's command replace its image's (runs any program as the agent's user)")
}

// run settles the configuration, builds the agent and its runtime, and
// runs them until the command's context ends.
func (df *agentDaemonFlags) run(cmd *cobra.Command) error {
	cfg := &df.cfg
	if df.joinToken == "" {
		df.joinToken = os.Getenv("SOKOVAN_JOIN_TOKEN")
	}
	if df.identityDir == "" {
		df.identityDir = filepath.Join(df.dataDir, "identity")
	}
	withIdentity := df.joinToken != "" || agent.Joined(df.identityDir)
	if err := settleAgentConfig(cfg, df.id, df.kind, df.sl.AllowCommand, withIdentity); err != nil {
		return err
	}
	if err := agentTrust(cmd, cfg, withIdentity, df.managerCA, df.joinToken, df.identityDir); err != nil {
		return err
	}
	cfg.Runtime = df.kind
	cfg.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	if err := df.offer(cmd.Context()); err != nil {
		return err
	}
	a, err := agent.New(*cfg)
	if err != nil {
		return err
	}
	rt, err := df.runtime(cmd.Context(), a)
	if err != nil {
		return err
	}
	return a.Run(cmd.Context(), rt)
}

// offer sets what the agent offers at registration: the slots --cpu and
// --mem override, the partition's for slurm, and the devices.
func (df *agentDaemonFlags) offer(ctx context.Context) error {
	cfg := &df.cfg
	if df.cpu != "" || df.mem != "" {
		cfg.Capacity = agent.DetectCapacity()
		if df.cpu != "" {
			cfg.Capacity["cpu"] = df.cpu
		}
		if df.mem != "" {
			cfg.Capacity["mem"] = df.mem
		}
	}
	if df.kind == "slurm" && df.cpu == "" && df.mem == "" {
		// The partition's nodes, not this host, are what the agent
		// offers at registration; the runtime reads them again for
		// every heartbeat (slurm.Runtime.Capacity).
		caps, err := slurm.Capacity(ctx, df.sl.Commands, df.sl.Partition)
		if err != nil {
			return err
		}
		cfg.Capacity = caps
	}
	if df.kind == "slurm" && df.devSpec == "auto" {
		// SLURM picks the GPUs itself (--gres): the agent offers
		// the partition's count, not devices of this host.
		df.devSpec = "none"
	}
	devs, err := devices.Discover(ctx, df.devSpec)
	if err != nil {
		return err
	}
	cfg.Devices = devs
	return nil
}

// runtime builds the --runtime the agent runs kernels with.
func (df *agentDaemonFlags) runtime(ctx context.Context, a *agent.Agent) (runtime.Runtime, error) {
	cfg := &df.cfg
	switch df.kind {
	case "process":
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		uids, err := parseUIDRange(df.kernelUIDs)
		if err != nil {
			return nil, err
		}
		return process.New(process.Config{DataDir: filepath.Join(df.dataDir, "kernels"), Catalog: process.DefaultCatalog(self),
			Sink: a.Sink, Log: cfg.Log, KernelUIDs: uids, RunAsAgentUser: df.asAgentUser, AllowCommand: cfg.AllowsCommand})
	case "docker":
		d, err := docker.New(ctx, docker.Config{Host: df.dockerHost, AgentID: df.id,
			DataDir: filepath.Join(df.dataDir, "docker"), Sink: a.Sink, Log: cfg.Log, NetworkMode: df.dockerNetwork})
		if err != nil {
			return nil, err
		}
		// Find the kernels an earlier run of this agent left
		// running, so registration reports them.
		if err := d.Recover(ctx); err != nil {
			return nil, err
		}
		return d, nil
	case "slurm":
		df.sl.Sink, df.sl.Log = a.Sink, cfg.Log
		if df.sl.WorkDir == "" {
			df.sl.WorkDir = filepath.Join(df.dataDir, "slurm")
		}
		s, err := slurm.New(df.sl)
		if err != nil {
			return nil, err
		}
		// Re-adopt the jobs an earlier run of this agent submitted,
		// so registration reports them.
		if err := s.Recover(ctx); err != nil {
			return nil, err
		}
		return s, nil
	case "sim":
		return sim.New(sim.Config{Sink: a.Sink})
	default:
		return nil, fmt.Errorf("--runtime %q: want process, docker, slurm or sim", df.kind)
	}
}

// parseUIDRange reads --kernel-uids, FIRST-LAST; empty is the runtime's
// default.
func parseUIDRange(s string) (process.UIDRange, error) {
	if s == "" {
		return process.UIDRange{}, nil
	}
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.Atoi(a)
	last, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || first < 1000 || last < first {
		return process.UIDRange{}, fmt.Errorf("--kernel-uids %q: want FIRST-LAST, such as 2000000000-2000065535, from 1000 up", s)
	}
	return process.UIDRange{First: first, Count: last - first + 1}, nil
}
