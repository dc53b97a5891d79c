package main

import (
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// drainPoll is how often --wait reads the agent; a variable so tests need
// not wait a second per read.
var drainPoll = time.Second

func newAgentDrainCmd(o *output) *cobra.Command {
	var deadline string
	var wait bool
	cmd := &cobra.Command{
		Use:   "drain ID",
		Short: "Place nothing new on the agent; at --deadline terminate what still runs there",
		Long: "Drain the agent as Nomad's node drain does: it becomes unschedulable and its sessions may end on\n" +
			"their own; once --deadline has passed the manager terminates those still running, with a reason\n" +
			"naming the drain. Without --deadline nothing is terminated. With --wait, print progress until the\n" +
			"agent holds no kernel (\"drained\"). `sokovan agent uncordon ID` ends a drain.",
		Example:           "  sokovan agent drain agent-1 --deadline 1h --wait",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listAgentIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/v1/agents/" + url.PathEscape(args[0]) + "/drain"
			if deadline != "" {
				path += "?deadline=" + url.QueryEscape(deadline)
			}
			if !wait {
				return call(cmd, o, "POST", path, nil, func(w io.Writer, a v1.Agent) error {
					printDrain(w, a)
					return nil
				})
			}
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			var a v1.Agent
			if _, err := c.do(cmd.Context(), "POST", path, nil, &a); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			last := -1
			for {
				if a.Drain != nil && a.Drain.RemainingKernels != last {
					last = a.Drain.RemainingKernels
					printDrain(w, a)
				}
				if a.Drain == nil {
					return fmt.Errorf("agent %s is no longer draining (uncordoned)", a.ID)
				}
				if a.Drain.Drained {
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(drainPoll):
				}
				a = v1.Agent{}
				if _, err := c.do(cmd.Context(), "GET", "/v1/agents/"+url.PathEscape(args[0]), nil, &a); err != nil {
					return err
				}
			}
		},
	}
	cmd.Flags().StringVar(&deadline, "deadline", "", "terminate what still runs after this long (e.g. 1h; 0s: at once)")
	cmd.Flags().BoolVar(&wait, "wait", false, "print progress until the agent is drained")
	return cmd
}

func printDrain(w io.Writer, a v1.Agent) {
	switch {
	case a.Drain == nil:
		fmt.Fprintf(w, "agent %s is not draining\n", a.ID)
	case a.Drain.Drained:
		fmt.Fprintf(w, "agent %s drained\n", a.ID)
	case a.Drain.Deadline != nil:
		fmt.Fprintf(w, "agent %s draining: %d kernels remain; what remains at %s is terminated\n",
			a.ID, a.Drain.RemainingKernels, a.Drain.Deadline.Local().Format(time.RFC3339))
	default:
		fmt.Fprintf(w, "agent %s draining: %d kernels remain (no deadline)\n", a.ID, a.Drain.RemainingKernels)
	}
}
