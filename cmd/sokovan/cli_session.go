package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func newSessionCmd() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:     "session",
		Aliases: []string{"sessions"},
		Short:   "Submit, inspect and end sessions",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return o.check()
		},
	}
	o.register(cmd)
	cmd.AddCommand(newSessionCreateCmd(&o), newSessionListCmd(&o), newSessionShowCmd(&o), newSessionHistoryCmd(&o),
		newSessionWhyCmd(&o), newSessionRemoveCmd(&o), newSessionLogsCmd(), newSessionWatchCmd(&o))
	return cmd
}

func listSessionIDs(ctx context.Context, c *client) ([]string, error) {
	var list v1.SessionPage
	if _, err := c.do(ctx, "GET", "/v1/sessions?limit=200", nil, &list); err != nil {
		return nil, err
	}
	out := make([]string, len(list.Items))
	for i, s := range list.Items {
		out[i] = s.ID + "\t" + s.Status + " " + s.Name
	}
	return out, nil
}

func sessionPath(id string, rest ...string) string {
	return "/v1/sessions/" + url.PathEscape(id) + strings.Join(rest, "")
}

func newSessionCreateCmd(o *output) *cobra.Command {
	var (
		image, name, typ, cpu, mem, mode, group, startsAt, arch string
		slots, deps, agents, env                                []string
		size, priority                                          int
		wait, waitEnd                                           bool
	)
	cmd := &cobra.Command{
		Use:   "create --image IMG [flags] [-- COMMAND...]",
		Short: "Submit a session",
		Long: "Submit a session. Quantities are per kernel: --cpu 0.5, --mem 4g, --slot cuda.device=1.\n" +
			"With --wait, follow the session live until it is RUNNING or has ended; the exit status is 0 for\n" +
			"RUNNING or a successful end, 1 otherwise. With --wait-end, follow it until it has ended (for batch\n" +
			"jobs); the exit status is 0 only when every kernel exited 0.",
		Example: "  sokovan session create --image sleep --cpu 1 --mem 1g --wait\n" +
			"  sokovan session create --image exit:0 --type batch --cluster-size 2 --cluster-mode multi-node",
		RunE: func(cmd *cobra.Command, args []string) error {
			resources, err := keyValues("slot", slots)
			if err != nil {
				return err
			}
			for _, q := range []struct{ slot, v, flag string }{{"cpu", cpu, "cpu"}, {"mem", mem, "mem"}} {
				if q.v == "" {
					continue
				}
				if _, dup := resources[q.slot]; dup {
					return fmt.Errorf("--%s and --slot %s=… both set %s", q.flag, q.slot, q.slot)
				}
				resources[q.slot] = q.v
			}
			envs, err := keyValues("env", env)
			if err != nil {
				return err
			}
			// Flags left at their defaults are not sent: the manager's
			// defaults (and the group's) apply.
			body := v1.CreateSessionRequest{Image: image, Resources: resources, Env: envs, Command: args}
			f := cmd.Flags()
			if f.Changed("name") {
				body.Name = name
			}
			if f.Changed("type") {
				body.Type = typ
			}
			if f.Changed("cluster-size") {
				body.ClusterSize = &size
			}
			if f.Changed("cluster-mode") {
				body.ClusterMode = mode
			}
			if f.Changed("priority") {
				body.Priority = &priority
			}
			if f.Changed("group") {
				body.ResourceGroup = group
			}
			if f.Changed("starts-at") {
				body.StartsAt = startsAt
			}
			if f.Changed("arch") {
				body.Architecture = arch
			}
			if f.Changed("depends-on") {
				body.DependsOn = deps
			}
			if f.Changed("agent") {
				body.DesignatedAgents = agents
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var s v1.Session
			raw, err := c.do(ctx, "POST", "/v1/sessions", body, &s)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !wait && !waitEnd {
				if o.json() {
					return printJSON(out, raw)
				}
				fmt.Fprintf(out, "%s  %s\n", s.ID, s.Status)
				return nil
			}
			// In JSON mode the progress goes to stderr and stdout gets
			// the session as it ended up.
			progress := out
			if o.json() {
				progress = cmd.ErrOrStderr()
			}
			waitErr := waitSession(ctx, c, s.ID, progress, waitEnd)
			if o.json() {
				if raw, err := c.do(ctx, "GET", sessionPath(s.ID), nil, nil); err == nil {
					_ = printJSON(out, raw)
				}
			}
			return waitErr
		},
	}
	f := cmd.Flags()
	f.StringVar(&image, "image", "", "image to run (required)")
	f.StringVar(&name, "name", "", "session name")
	f.StringVar(&typ, "type", "interactive", "interactive, batch or inference")
	f.StringVar(&cpu, "cpu", "", "CPU cores per kernel, such as 2 or 0.5 (default: the group's, 1 unless set)")
	f.StringVar(&mem, "mem", "", "memory per kernel, such as 4g or 512m (default: the group's, 1g unless set)")
	f.StringArrayVar(&slots, "slot", nil, "another slot per kernel, NAME=QUANTITY (repeatable), such as cuda.device=1; a slot not named gets the group's default")
	f.IntVar(&size, "cluster-size", 1, "number of kernels (1 to 64)")
	f.StringVar(&mode, "cluster-mode", "single-node", "single-node (all kernels on one agent) or multi-node")
	f.IntVar(&priority, "priority", 10, "priority, 0 to 100; higher is scheduled first")
	f.StringArrayVar(&deps, "depends-on", nil, "session that must end successfully first (repeatable)")
	f.BoolVar(&wait, "wait", false, "follow the session until it is RUNNING or has ended")
	f.BoolVar(&waitEnd, "wait-end", false, "follow the session until it has ended; succeed only if it succeeded")
	f.StringVarP(&group, "group", "g", "", "resource group (default: the manager's default)")
	f.StringVar(&startsAt, "starts-at", "", "earliest start, RFC 3339 (such as 2026-03-01T12:00:00Z)")
	f.StringVar(&arch, "arch", "", "CPU architecture of the kernels (default x86_64)")
	f.StringArrayVar(&agents, "agent", nil, "run only on this agent (repeatable)")
	f.StringArrayVar(&env, "env", nil, "environment variable NAME=VALUE (repeatable)")
	_ = cmd.MarkFlagRequired("image")
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"interactive", "batch", "inference"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("cluster-mode", cobra.FixedCompletions([]string{"single-node", "multi-node"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("depends-on", completeFrom(listSessionIDs))
	_ = cmd.RegisterFlagCompletionFunc("group", completeFrom(listGroupNames))
	_ = cmd.RegisterFlagCompletionFunc("agent", completeFrom(listAgentIDs))
	return cmd
}

// errWaitEnded reports a session that ended other than successfully.
var errWaitEnded = errors.New("session did not succeed")

// waitSession follows the session on the event stream, printing each
// status it takes, until it is RUNNING (unless toEnd) or has ended. The
// stream opens with the session as it is, so nothing between submit and
// now is missed; a dropped stream is resumed from the last event seen.
func waitSession(ctx context.Context, c *client, id string, out io.Writer, toEnd bool) error {
	last := ""
	var result error
	done := false
	reached := func(status, reason string, at *time.Time) (bool, error) {
		if status == last {
			return false, nil
		}
		last = status
		line := fmt.Sprintf("%s  %s  %s", when(at), id, status)
		if reason != "" {
			line += "  (" + reason + ")"
		}
		fmt.Fprintln(out, line)
		switch status {
		case "RUNNING":
			return !toEnd, nil
		case "TERMINATED":
			var s v1.Session
			if _, err := c.do(ctx, "GET", sessionPath(id), nil, &s); err != nil {
				return true, err
			}
			if s.Outcome == "success" {
				return true, nil
			}
			return true, fmt.Errorf("%w: %s ended TERMINATED with outcome %s%s", errWaitEnded, id, s.Outcome, kernelExits(s))
		case "CANCELLED", "ERROR":
			msg := fmt.Sprintf("%s ended %s", id, status)
			if reason != "" {
				msg += ": " + reason
			}
			return true, fmt.Errorf("%w: %s", errWaitEnded, msg)
		}
		return false, nil
	}
	err := follow(ctx, c, "/v1/events?session="+url.QueryEscape(id), nil, func(ev sseEvent) error {
		switch ev.Event {
		case "snapshot":
			var s v1.Session
			if err := json.Unmarshal([]byte(ev.Data), &s); err != nil {
				return fmt.Errorf("event stream: %w", err)
			}
			done, result = reached(s.Status, s.StatusReason, &s.StatusChangedAt)
		case "session":
			var ch v1.Change
			if err := json.Unmarshal([]byte(ev.Data), &ch); err != nil {
				return fmt.Errorf("event stream: %w", err)
			}
			done, result = reached(ch.To, ch.Reason, &ch.At)
		}
		if done {
			return errStopFollowing
		}
		return nil
	})
	if done {
		return result
	}
	return err
}

func kernelExits(s v1.Session) string {
	var parts []string
	for _, k := range s.Kernels {
		if k.ExitCode != nil {
			parts = append(parts, fmt.Sprintf("%s exited %d", k.ID, *k.ExitCode))
		} else if k.Status != "TERMINATED" {
			parts = append(parts, fmt.Sprintf("%s %s", k.ID, k.Status))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func newSessionListCmd(o *output) *cobra.Command {
	var (
		statuses []string
		limit    int
		owner    string
	)
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List sessions, oldest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			q := url.Values{}
			for _, s := range statuses {
				q.Add("status", s)
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			if owner != "" {
				q.Set("owner", owner)
			}
			path := "/v1/sessions"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			var list v1.SessionPage
			raw, err := c.do(cmd.Context(), "GET", path, nil, &list)
			if err != nil {
				return err
			}
			if o.json() {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			rows := make([][]string, len(list.Items))
			for i, s := range list.Items {
				rows[i] = []string{s.ID, orDash(s.Name), s.Owner, s.Type, s.Status, s.ResourceGroup,
					slotList(s.RequestedSlots), strconv.Itoa(s.ClusterSize), when(&s.CreatedAt)}
			}
			return table(cmd.OutOrStdout(), []string{"ID", "NAME", "OWNER", "TYPE", "STATUS", "GROUP", "PER KERNEL", "KERNELS", "CREATED"}, rows)
		},
	}
	cmd.Flags().StringArrayVar(&statuses, "status", nil, "only sessions in this status (repeatable)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many")
	cmd.Flags().StringVar(&owner, "owner", "", "admins: only this user's sessions")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newSessionShowCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "show ID",
		Short:             "Show a session and its kernels",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "GET", sessionPath(args[0]), nil, func(w io.Writer, s v1.Session) error {
				rows := [][]string{
					{"ID", s.ID}, {"Name", orDash(s.Name)}, {"Owner", s.Owner}, {"Type", s.Type}, {"Image", s.Image},
					{"Status", s.Status}, {"Reason", orDash(s.StatusReason)}, {"Since", when(&s.StatusChangedAt)},
					{"Created", when(&s.CreatedAt)}, {"Group", s.ResourceGroup}, {"Priority", strconv.Itoa(s.Priority)},
					{"Per kernel", slotList(s.RequestedSlots)}, {"Cluster", fmt.Sprintf("%s × %d", s.ClusterMode, s.ClusterSize)},
					{"Depends on", orDash(strings.Join(s.DependsOn, ", "))}, {"Outcome", orDash(s.Outcome)},
				}
				for _, r := range rows {
					fmt.Fprintf(w, "%-11s %s\n", r[0]+":", r[1])
				}
				fmt.Fprintln(w)
				krows := make([][]string, len(s.Kernels))
				for i, k := range s.Kernels {
					exit := "-"
					if k.ExitCode != nil {
						exit = strconv.Itoa(*k.ExitCode)
					}
					krows[i] = []string{k.ID, k.ClusterRole, orDash(k.Agent), k.Status, exit, orDash(k.StatusReason)}
				}
				return table(w, []string{"KERNEL", "ROLE", "AGENT", "STATUS", "EXIT", "REASON"}, krows)
			})
		},
	}
}

func newSessionHistoryCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "history ID",
		Short:             "Show what the scheduler did with a session, oldest first",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			var h v1.List[v1.History]
			raw, err := c.do(cmd.Context(), "GET", sessionPath(args[0], "/history"), nil, &h)
			if err != nil {
				return err
			}
			if o.json() {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			rows := make([][]string, len(h.Items))
			for i, e := range h.Items {
				rows[i] = []string{when(&e.At), e.Handler, e.Result, e.From + " → " + e.To, "×" + strconv.Itoa(e.Attempt), orDash(e.Message)}
			}
			return table(cmd.OutOrStdout(), []string{"AT", "HANDLER", "RESULT", "STATUS", "TIMES", "MESSAGE"}, rows)
		},
	}
}

func newSessionWhyCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "why ID",
		Short:             "Say what keeps a session from starting, and what to do about it",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			var why v1.Why
			raw, err := c.do(cmd.Context(), "GET", sessionPath(args[0], "/why"), nil, &why)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json() {
				return printJSON(w, raw)
			}
			switch p := why.Progress; {
			case p != nil:
				fmt.Fprintf(w, "session is %s since %s", why.Status, p.Since.Local().Format(time.DateTime))
				if p.Deadline != nil {
					fmt.Fprintf(w, "; its %s bound moves it on at %s", p.Bound, p.Deadline.Local().Format(time.DateTime))
				}
				fmt.Fprintln(w)
				for _, line := range p.WaitingFor {
					fmt.Fprintln(w, "  "+line)
				}
				if p.LastFailure != "" {
					fmt.Fprintln(w, "  last failed attempt: "+p.LastFailure)
				}
			case why.Status != "PENDING":
				fmt.Fprintf(w, "session is %s: nothing holds it in the queue\n", why.Status)
			case len(why.Blockers) == 0:
				fmt.Fprintln(w, "nothing blocks it now: the next scheduling round should place it")
			}
			for _, b := range why.Blockers {
				fmt.Fprintln(w, blockerLine(b))
			}
			if t := why.EstimatedStart; t != nil {
				fmt.Fprintf(w, "estimated start: ~%s (estimate)\n", estimateTime(*t, time.Now()))
			}
			return nil
		},
	}
}

// blockerLine puts one blocker on one line: what, where, the numbers, and
// what a person can do about it.
func blockerLine(b v1.Blocker) string {
	var parts []string
	parts = append(parts, b.Kind)
	where := b.Scope
	if b.Slot != "" {
		where += " " + b.Slot
	}
	if where != "" {
		parts = append(parts, strings.TrimSpace(where))
	}
	if b.Requested != "" || b.Available != "" {
		parts = append(parts, fmt.Sprintf("requested %s, available %s", orDash(b.Requested), orDash(b.Available)))
	}
	line := strings.Join(parts, ": ") + " — " + b.Message
	if h := blockerHint(b); h != "" {
		line += "; hint: " + h
	}
	return line
}

func blockerHint(b v1.Blocker) string {
	owner, name, _ := strings.Cut(b.Scope, ":")
	switch b.Kind {
	case "quota":
		return fmt.Sprintf("end another session of %s %s, ask for less %s, or have an admin raise it "+
			"(sokovan policy set %s %s --max-slot %s=…)", owner, name, b.Slot, owner, name, b.Slot)
	case "concurrency":
		return fmt.Sprintf("wait for a running session of %s %s to end, or have an admin raise max_concurrent_sessions", owner, name)
	case "capacity", "gang":
		if b.ExceedsCapacity {
			return "no agent is that large: ask for less per kernel, or add a larger agent"
		}
		return "wait for running sessions to free resources, or ask for less per kernel"
	case "no_agents":
		return "no agent can take it: check `sokovan agent ls` for cordoned or lost agents"
	case "architecture":
		return "choose another --arch, or add agents of that architecture"
	case "dependency":
		if b.Impossible {
			return "this session can never start; delete it and submit again without the dependency"
		}
		return "it starts when " + name + " ends successfully"
	case "start_time":
		return "it waits for its --starts-at time"
	case "queue_position":
		return "it waits behind " + name + " (the group's head-of-line policy is block)"
	case "resource_group_state":
		return "an admin can reactivate the group (sokovan rg set " + name + " --state ACTIVE)"
	case "session_type":
		return "submit it to a resource group that runs this type"
	}
	return ""
}

func newSessionRemoveCmd(o *output) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:               "rm ID...",
		Aliases:           []string{"delete", "terminate"},
		Short:             "End sessions: PENDING ones are cancelled, others terminated",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			path := func(id string) string {
				if force {
					return sessionPath(id, "?force=true")
				}
				return sessionPath(id)
			}
			var errs []error
			for _, id := range args {
				var s v1.Session
				raw, err := c.do(cmd.Context(), "DELETE", path(id), nil, &s)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", id, err))
					continue
				}
				if o.json() {
					_ = printJSON(cmd.OutOrStdout(), raw)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%s  %s\n", s.ID, s.Status)
				}
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "kill the kernels at once, without the grace period")
	return cmd
}

func newSessionLogsCmd() *cobra.Command {
	var kernel string
	cmd := &cobra.Command{
		Use:               "logs ID",
		Short:             "Print a kernel's output (the main kernel unless --kernel)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			path := sessionPath(args[0], "/logs")
			if kernel != "" {
				path += "?kernel=" + url.QueryEscape(kernel)
			}
			req, err := c.request(cmd.Context(), "GET", path, nil)
			if err != nil {
				return err
			}
			resp, err := c.send(c.stream, req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, err = io.Copy(cmd.OutOrStdout(), resp.Body)
			if cmd.Context().Err() != nil {
				return nil // interrupted while following: not a failure
			}
			return err
		},
	}
	cmd.Flags().StringVar(&kernel, "kernel", "", "kernel id or cluster index")
	return cmd
}

// estimateTime writes an estimated start in local time to the minute,
// with the date only when it is not today: more precision would claim
// more than a replay with guessed run times knows.
func estimateTime(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if t.Year() == now.Year() && t.YearDay() == now.YearDay() {
		return t.Format("15:04")
	}
	return t.Format("2006-01-02 15:04")
}
