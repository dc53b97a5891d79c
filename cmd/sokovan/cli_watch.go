package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func newSessionWatchCmd(o *output) *cobra.Command {
	var kernels bool
	cmd := &cobra.Command{
		Use:   "watch [SESSION...]",
		Short: "Print status changes of your sessions (or the ones named) as they happen, until Ctrl-C",
		Long: "Follows the manager's event stream. Named sessions are first printed as they are now. " +
			"With -o json each change is printed as the API sends it, one JSON object a line.",
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			q := url.Values{}
			for _, id := range args {
				q.Add("session", id)
			}
			path := "/v1/events"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			opened := func() { fmt.Fprintln(cmd.ErrOrStderr(), "watching; Ctrl-C stops") }
			err = follow(cmd.Context(), c, path, opened, func(ev sseEvent) error {
				return printChange(cmd.OutOrStdout(), o, ev, kernels)
			})
			if errors.Is(err, context.Canceled) {
				return nil // Ctrl-C is how a watch ends
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&kernels, "kernels", false, "print kernels' changes too")
	return cmd
}

// errStopFollowing is what a follow callback returns to end the stream
// without an error of its own.
var errStopFollowing = errors.New("stop following")

// follow reads the event stream until ctx ends, resuming after the last
// event seen when the stream drops (a manager restarting, say). An API
// error, an error event or an error from fn ends it. opened is called each
// time the stream (re)opens.
func follow(ctx context.Context, c *client, path string, opened func(), fn func(sseEvent) error) error {
	lastID := ""
	for failures := 0; ; {
		var fatal error
		err := c.events(ctx, path, lastID, opened, func(ev sseEvent) (bool, error) {
			failures = 0
			if ev.ID != "" {
				lastID = ev.ID
			}
			if ev.Event == "error" {
				fatal = fmt.Errorf("event stream: %s", ev.Data)
			} else {
				fatal = fn(ev)
			}
			return fatal != nil, nil
		})
		if fatal != nil {
			return fatal
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ae *apiError
		if errors.As(err, &ae) {
			return err
		}
		if failures++; failures > 5 {
			return fmt.Errorf("lost the event stream: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(failures) * 500 * time.Millisecond):
		}
	}
}

func printChange(w io.Writer, o *output, ev sseEvent, kernels bool) error {
	if ev.Event == "kernel" && !kernels {
		return nil
	}
	if o.json() {
		_, err := fmt.Fprintln(w, ev.Data)
		return err
	}
	switch ev.Event {
	case "snapshot":
		var s v1.Session
		if err := json.Unmarshal([]byte(ev.Data), &s); err != nil {
			return fmt.Errorf("event stream: %w", err)
		}
		line := fmt.Sprintf("%s  %s  is %s", when(&s.StatusChangedAt), s.ID, s.Status)
		if s.StatusReason != "" {
			line += "  (" + s.StatusReason + ")"
		}
		_, err := fmt.Fprintln(w, line)
		return err
	case "session", "kernel":
		var ch v1.Change
		if err := json.Unmarshal([]byte(ev.Data), &ch); err != nil {
			return fmt.Errorf("event stream: %w", err)
		}
		who := ch.SessionID
		if ch.KernelID != "" {
			who = "  kernel " + ch.KernelID
			if ch.Agent != "" {
				who += " on " + ch.Agent
			}
		}
		from := ch.From
		if from == "" {
			from = "new"
		}
		line := fmt.Sprintf("%s  %s  %s → %s", when(&ch.At), who, from, ch.To)
		if ch.ExitCode != nil {
			line += fmt.Sprintf("  exit %d", *ch.ExitCode)
		}
		if ch.Reason != "" {
			line += "  (" + ch.Reason + ")"
		}
		_, err := fmt.Fprintln(w, line)
		return err
	}
	return nil
}
