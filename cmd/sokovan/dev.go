package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/manager"
)

func newDevCmd() *cobra.Command {
	var cfg manager.DevConfig
	var cpu, mem, devSpec string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a manager and local agents in one process (SQLite, process runtime)",
		Long: `Starts a manager with SQLite under --data-dir, the in-process event path and
--agents local agents on the process runtime. Prints the API URL and the admin
token (also written to DATA_DIR/admin-token; SOKOVAN_ADMIN_TOKEN overrides it).
Its agents run a session's own command (create -- CMD...): dev mode is your own
machine.

Ctrl-C stops the manager and the agents, and with them every running kernel:
the process runtime never leaves a kernel running without its agent. On a
restart on the same directory, sessions that had not started running carry on;
sessions that were RUNNING are terminated, their kernels in ERROR ("not running
on agent dev-agent-N after it restarted"), and their logs stay readable.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.AdminToken = os.Getenv("SOKOVAN_ADMIN_TOKEN")
			cfg.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			if cpu != "" || mem != "" {
				cfg.AgentCapacity = map[string]string{}
				if cpu != "" {
					cfg.AgentCapacity["cpu"] = cpu
				}
				if mem != "" {
					cfg.AgentCapacity["mem"] = mem
				}
			}
			devs, err := domain.ParseFakeDevices(devSpec)
			if err != nil {
				return fmt.Errorf("--agent-devices: %w", err)
			}
			cfg.AgentDevices = devs
			cfg.UserAPI = userAPI
			out := cmd.OutOrStdout()
			return manager.RunDev(cmd.Context(), cfg, func(info manager.DevInfo) {
				fmt.Fprintf(out, "Sokovan-Go dev mode\n  API:         %s\n  dashboard:   %s/\n  admin token: %s\n  agents:      %s\n  data dir:    %s\n",
					info.URL, info.URL, info.AdminToken, strings.Join(agentNames(info), ", "), cfg.DataDir)
				fmt.Fprintf(out, "\n  export SOKOVAN_ADDR=%s SOKOVAN_TOKEN=%s\n", info.URL, info.AdminToken)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", "./sokovan-data", "where the SQLite database, tokens and kernel logs live")
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:8470", "API address")
	f.IntVar(&cfg.Agents, "agents", 2, "number of local agents")
	f.StringVar(&cpu, "agent-cpu", "", "cpu each local agent offers (default: the machine's)")
	f.StringVar(&devSpec, "agent-devices", "", "fake accelerators each local agent hands out one by one, e.g. cuda:2 or cuda.shares:1 (CUDA_VISIBLE_DEVICES then names them)")
	f.StringVar(&mem, "agent-mem", "", "memory each local agent offers, e.g. 8g (default: the machine's)")
	return cmd
}

func agentNames(info manager.DevInfo) []string {
	out := make([]string, len(info.Agents))
	for i, a := range info.Agents {
		out[i] = string(a)
	}
	return out
}
