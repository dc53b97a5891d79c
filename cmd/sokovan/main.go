package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	// A kernel of a serving image (http-echo) is this binary re-executed;
	// route it before anything else parses the arguments.
	if code, ok := process.RunChild(os.Args[1:]); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRoot().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sokovan:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "sokovan",
		Short:         "Sokovan-Go: a session scheduler for shared GPU/CPU clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newVersionCmd(), newDevCmd(), newServerCmd())
	root.AddCommand(newSimulateCmd())
	addClientCommands(root)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "sokovan %s\n", version)
			return err
		},
	}
}
