package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/process"
)

// version, commit and date are set at build time with
// -ldflags "-X main.version=… -X main.commit=… -X main.date=…"; left
// unset, they come from the build's own record (see buildInfo).
var (
	version = ""
	commit  = ""
	date    = ""
)

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
	refuseUnknown(root)
	return root
}

// refuseUnknown makes every command that only groups others print its
// help and fail on a word it does not know. Cobra prints the help and
// exits 0 for such a command, so a typo (`sokovan session lss`) would
// look like success to a script.
func refuseUnknown(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknown(sub)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		cmd.SetOut(cmd.ErrOrStderr())
		_ = cmd.Help()
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return errors.New(msg)
	}
}

// buildVersion is what `sokovan version` reports.
type buildVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
}

// buildInfo reads the version from -ldflags where set, otherwise from what
// the go command recorded: the module version for `go install`, and the
// VCS revision and time for a build in a checkout.
func buildInfo() buildVersion {
	v := buildVersion{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if v.Commit == "" {
					v.Commit = s.Value
				}
			case "vcs.time":
				if v.Date == "" {
					v.Date = s.Value
				}
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	for _, p := range []*string{&v.Commit, &v.Date} {
		if *p == "" {
			*p = "unknown"
		}
	}
	return v
}

func newVersionCmd() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Args:  cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			return o.check()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildInfo()
			if o.json() {
				raw, err := json.Marshal(v)
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), raw)
			}
			dirty := ""
			if v.Modified {
				dirty = " (modified)"
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "sokovan %s\ncommit %s%s\nbuilt %s with %s\n",
				v.Version, v.Commit, dirty, v.Date, v.GoVersion)
			return err
		},
	}
	o.register(cmd)
	return cmd
}
