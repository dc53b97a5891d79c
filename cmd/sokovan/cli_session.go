package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/simulate"
)

func newSessionCmd() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:     "session",
		Aliases: []string{"sessions"},
		Short:   "Submit, inspect and end sessions",
		Long: "Submit, inspect and end sessions. Every verb names a session by its id, a unique prefix of the\n" +
			"id (6 characters or more, as ls shows it) or its name: a name is unique among your live sessions.",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return o.check()
		},
	}
	o.register(cmd)
	cmd.AddCommand(newSessionCreateCmd(&o), newSessionListCmd(&o), newSessionShowCmd(&o), newSessionHistoryCmd(&o),
		newSessionWhyCmd(&o), newSessionRemoveCmd(&o), newSessionLogsCmd(), newSessionWatchCmd(&o),
		newSessionPortForwardCmd())
	return cmd
}

// listSessionIDs offers the newest sessions for completion, by name where
// a live session has one (what people type), and by id.
func listSessionIDs(ctx context.Context, c *client) ([]string, error) {
	var list v1.SessionPage
	if _, err := c.do(ctx, "GET", "/v1/sessions?order=newest&limit=200", nil, &list); err != nil {
		return nil, err
	}
	out := make([]string, 0, 2*len(list.Items))
	for _, s := range list.Items {
		if live := s.Outcome == ""; live && s.Name != "" {
			out = append(out, s.Name+"\t"+s.Status+" "+shortID(s.ID))
		}
		out = append(out, s.ID+"\t"+s.Status+" "+s.Name)
	}
	return out, nil
}

func sessionPath(id string, rest ...string) string {
	return "/v1/sessions/" + url.PathEscape(id) + strings.Join(rest, "")
}

// createFlags are `session create`'s flags, which `sokovan run` shares.
type createFlags struct {
	image, name, typ, cpu, mem, mode, group, startsAt, arch string
	timeLimit, job, array                                   string
	preemptible, requeue                                    bool
	slots, deps, agents, env                                []string
	size, priority                                          int
	wait, waitEnd                                           bool
	timeout                                                 time.Duration
}

func newSessionCreateCmd(o *output) *cobra.Command {
	var cf createFlags
	cmd := &cobra.Command{
		Use:   "create --image IMG [flags] [-- COMMAND...]",
		Short: "Submit a session, or an array of sessions",
		Long: "Submit a session. Quantities are per kernel: --cpu 0.5, --mem 4g, --slot cuda.device=1.\n" +
			"With --wait, follow the session live until it is RUNNING or has ended; the exit status is 0 for\n" +
			"RUNNING or a successful end, 1 otherwise. With --wait-end, follow it until it has ended (for batch\n" +
			"jobs); the exit status is 0 only when every kernel exited 0. While waiting, what holds the session (its\n" +
			"blockers, or what its kernels wait for) is printed whenever it changes. --timeout gives up after a while\n" +
			"(exit status 1); Ctrl-C stops waiting (exit status 0) and says where the session stands.\n" +
			"With --array (SLURM's --array: 0-99, 1,3,5-9:2, and %N to run at most N at once) one request submits\n" +
			"an array of sessions named NAME[index], each with SOKOVAN_ARRAY_INDEX and SOKOVAN_ARRAY_COUNT set;\n" +
			"--name is then required, and --wait-end waits for every element.",
		Example: "  sokovan session create --image sleep --cpu 1 --mem 1g --wait\n" +
			"  sokovan session create --image exit:0 --type batch --cluster-size 2 --cluster-mode multi-node\n" +
			"  sokovan session create --image exit:0 --type batch --name sweep --array 0-99%10",
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := cf.body(cmd, args)
			if err != nil {
				return err
			}
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			if cf.array != "" {
				return createArray(cmd, c, o, body, cf)
			}
			return createSession(cmd, c, o, body, cf)
		},
	}
	cf.register(cmd)
	return cmd
}

// body checks the flags and builds the request they ask for.
func (cf *createFlags) body(cmd *cobra.Command, args []string) (v1.CreateSessionRequest, error) {
	var body v1.CreateSessionRequest
	if cf.timeout < 0 || cf.timeout > 0 && !cf.wait && !cf.waitEnd {
		return body, errors.New("--timeout is how long --wait or --wait-end waits: give one of them, and a positive duration")
	}
	if cf.array != "" && cf.wait {
		return body, errors.New("--wait follows one session: with --array, give --wait-end to wait for every element")
	}
	resources, err := keyValues("slot", cf.slots)
	if err != nil {
		return body, err
	}
	for _, q := range []struct{ slot, v, flag string }{{"cpu", cf.cpu, "cpu"}, {"mem", cf.mem, "mem"}} {
		if q.v == "" {
			continue
		}
		if _, dup := resources[q.slot]; dup {
			return body, fmt.Errorf("--%s and --slot %s=… both set %s", q.flag, q.slot, q.slot)
		}
		resources[q.slot] = q.v
	}
	envs, err := keyValues("env", cf.env)
	if err != nil {
		return body, err
	}
	// Flags left at their defaults are not sent: the manager's defaults
	// (and the group's) apply.
	body = v1.CreateSessionRequest{Image: cf.image, Resources: resources, Env: envs, Command: args,
		Requeue: cf.requeue, Job: cf.job, Array: cf.array}
	f := cmd.Flags()
	set := func(flag string, apply func()) {
		if f.Changed(flag) {
			apply()
		}
	}
	set("name", func() { body.Name = cf.name })
	set("type", func() { body.Type = cf.typ })
	set("cluster-size", func() { body.ClusterSize = &cf.size })
	set("cluster-mode", func() { body.ClusterMode = cf.mode })
	set("priority", func() { body.Priority = &cf.priority })
	set("group", func() { body.ResourceGroup = cf.group })
	set("starts-at", func() { body.StartsAt = cf.startsAt })
	// Sent as typed: the server names time_limit when it is wrong or
	// above the group's maximum.
	set("time-limit", func() { body.TimeLimit = cf.timeLimit })
	set("preemptible", func() { body.Preemptible = &cf.preemptible })
	set("no-preempt", func() { no := false; body.Preemptible = &no })
	set("arch", func() { body.Architecture = cf.arch })
	set("depends-on", func() { body.DependsOn = cf.deps })
	set("agent", func() { body.DesignatedAgents = cf.agents })
	return body, nil
}

// createSession submits one session and, with --wait or --wait-end,
// follows it.
func createSession(cmd *cobra.Command, c *client, o *output, body v1.CreateSessionRequest, cf createFlags) error {
	ctx := cmd.Context()
	var s v1.Session
	raw, err := c.do(ctx, "POST", "/v1/sessions", body, &s)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if !cf.wait && !cf.waitEnd {
		if o.json() {
			return printJSON(out, raw)
		}
		fmt.Fprintf(out, "%s  %s\n", s.ID, s.Status)
		return nil
	}
	// In JSON mode the progress goes to stderr and stdout gets the
	// session as it ended up.
	progress := out
	if o.json() {
		progress = cmd.ErrOrStderr()
	}
	waitErr := waitSession(ctx, c, s.ID, progress, cf.waitEnd, cf.timeout)
	if o.json() {
		if raw, err := c.do(ctx, "GET", sessionPath(s.ID), nil, nil); err == nil {
			_ = printJSON(out, raw)
		}
	}
	return waitErr
}

func (cf *createFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&cf.image, "image", "", "image to run (required)")
	f.StringVar(&cf.name, "name", "", "session name, unique among your live sessions; every verb accepts it in place of the id")
	f.StringVar(&cf.typ, "type", "interactive", "interactive, batch or inference")
	f.StringVar(&cf.cpu, "cpu", "", "CPU cores per kernel, such as 2 or 0.5 (default: the group's, 1 unless set)")
	f.StringVar(&cf.mem, "mem", "", "memory per kernel, such as 4g, 512m or 4Gi (k/m/g/t are powers of 1024, as are Ki/Mi/Gi/Ti; default: the group's, 1g unless set)")
	f.StringArrayVar(&cf.slots, "slot", nil, "another slot per kernel, NAME=QUANTITY (repeatable), such as cuda.device=1; a slot not named gets the group's default")
	f.IntVar(&cf.size, "cluster-size", 1, "number of kernels (1 to 64)")
	f.StringVar(&cf.mode, "cluster-mode", "single-node", "single-node (all kernels on one agent) or multi-node")
	f.IntVar(&cf.priority, "priority", 10, "priority, 0 to 100; higher is scheduled first")
	f.StringVar(&cf.job, "job", "", "job (id or name) the session joins; it starts once the job's min-available members are placed together")
	f.StringVar(&cf.array, "array", "", "submit an array: indexes such as 0-99, 1,3,5-9:2, with %N to run at most N at once (0-99%10); at most 10000 elements, --name required")
	f.StringArrayVar(&cf.deps, "depends-on", nil, "session (id, id prefix or name) that must end successfully first (repeatable)")
	f.BoolVar(&cf.wait, "wait", false, "follow the session until it is RUNNING or has ended")
	f.BoolVar(&cf.waitEnd, "wait-end", false, "follow the session (or every element of an array) until it has ended; succeed only if it succeeded")
	f.DurationVar(&cf.timeout, "timeout", 0, "with --wait or --wait-end: give up after this long (such as 10m), exiting 1 with the session's state")
	f.StringVarP(&cf.group, "group", "g", "", "resource group (default: the manager's default)")
	f.StringVar(&cf.startsAt, "starts-at", "", "earliest start, RFC 3339 (such as 2026-03-01T12:00:00Z)")
	f.StringVar(&cf.timeLimit, "time-limit", "", "end the session this long after it starts running, such as 2h (default: the group's)")
	f.BoolVar(&cf.preemptible, "preemptible", false, "let higher priority sessions evict this one where the group preempts (default: batch only)")
	f.Bool("no-preempt", false, "never let a higher priority session evict this one")
	f.BoolVar(&cf.requeue, "requeue", false, "when preempted, submit a new attempt of this session")
	cmd.MarkFlagsMutuallyExclusive("preemptible", "no-preempt")
	f.StringVar(&cf.arch, "arch", "", "CPU architecture of the kernels (default x86_64)")
	f.StringArrayVar(&cf.agents, "agent", nil, "run only on this agent (repeatable)")
	f.StringArrayVar(&cf.env, "env", nil, "environment variable NAME=VALUE (repeatable)")
	_ = cmd.MarkFlagRequired("image")
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"interactive", "batch", "inference"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("cluster-mode", cobra.FixedCompletions([]string{"single-node", "multi-node"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("depends-on", completeFrom(listSessionIDs))
	_ = cmd.RegisterFlagCompletionFunc("group", completeFrom(listGroupNames))
	_ = cmd.RegisterFlagCompletionFunc("agent", completeFrom(listAgentIDs))
}

// errWaitEnded reports a session that ended other than successfully.
var errWaitEnded = errors.New("session did not succeed")

// errWaitTimeout reports a wait that ran out of --timeout.
var errWaitTimeout = errors.New("timed out")

// whyEvery is how often a wait asks why the session has not moved on. A
// session may wait for hours without a single status change, so the event
// stream alone would leave the terminal silent.
const (
	whyFirst = time.Second
	whyEvery = 3 * time.Second
)

// waitSession follows the session on the event stream, printing each
// status it takes, until it is RUNNING (unless toEnd) or has ended. The
// stream opens with the session as it is, so nothing between submit and
// now is missed; a dropped stream is resumed from the last event seen.
// Meanwhile it asks why every few seconds and prints what holds the
// session whenever that changes. timeout, when not zero, ends the wait
// with an error; Ctrl-C (ctx) ends it without one. Both print where the
// session stands.
func waitSession(ctx context.Context, c *client, id string, out io.Writer, toEnd bool, timeout time.Duration) error {
	var mu sync.Mutex // out is written by the stream and the poller
	say := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(out, line)
	}
	waitCtx, cancel := context.WithCancel(ctx)
	if timeout > 0 {
		waitCtx, cancel = context.WithTimeoutCause(ctx, timeout, errWaitTimeout)
	}
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pollWhy(waitCtx, c, id, say)
	}()
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: the poller stops first

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
		say(line)
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
	err := follow(waitCtx, c, "/v1/events?session="+url.QueryEscape(id), nil, func(ev sseEvent) error {
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
	if waitCtx.Err() == nil {
		return err
	}
	// The wait was cut short: say where the session stands, with a
	// context of its own, as the wait's is over.
	cancel()
	wg.Wait()
	stateCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer stop()
	state := sessionState(stateCtx, c, id)
	if ctx.Err() != nil {
		say("stopped waiting: " + state)
		return nil // Ctrl-C is how a person stops waiting, not a failure
	}
	return fmt.Errorf("%w after %s waiting for %s: %s", errWaitTimeout, timeout, id, state)
}

// pollWhy asks why the session waits, every whyEvery until ctx ends, and
// prints what holds it each time that changes: blockers while PENDING,
// what the kernels wait for once placed.
func pollWhy(ctx context.Context, c *client, id string, say func(string)) {
	shown := ""
	// The first look waits a moment: a session that starts at once needs
	// no commentary.
	t := time.NewTimer(whyFirst)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(whyEvery)
		}
		var why v1.Why
		if _, err := c.do(ctx, "GET", sessionPath(id, "/why"), nil, &why); err == nil {
			var lines []string
			for _, b := range why.Blockers {
				lines = append(lines, "  blocked: "+blockerLine(b))
			}
			if p := why.Progress; p != nil {
				for _, w := range p.WaitingFor {
					lines = append(lines, "  "+w)
				}
			}
			if now := strings.Join(lines, "\n"); now != shown {
				switch {
				case now != "":
					say(now)
				case why.Status == "PENDING":
					say("  no longer blocked: the next scheduling round should place it")
				}
				shown = now
			}
		}
	}
}

// sessionState is one line on where a session stands: its status, and
// what holds it if anything does.
func sessionState(ctx context.Context, c *client, id string) string {
	var why v1.Why
	if _, err := c.do(ctx, "GET", sessionPath(id, "/why"), nil, &why); err != nil {
		return fmt.Sprintf("%s (its state could not be read: %v)", id, err)
	}
	line := fmt.Sprintf("%s is %s", id, why.Status)
	switch {
	case len(why.Blockers) > 0:
		line += "; blocked: " + why.Blockers[0].Message
		if n := len(why.Blockers); n > 1 {
			line += fmt.Sprintf(" (and %d more: sokovan session why %s)", n-1, id)
		}
	case why.Progress != nil && len(why.Progress.WaitingFor) > 0:
		line += "; " + why.Progress.WaitingFor[0]
	}
	return line
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
		statuses, types   []string
		limit             int
		user, name, group string
		all, elements     bool
	)
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List sessions, newest first: live ones and those that ended in the last hour",
		Long: "List sessions, newest first. Without --all, sessions that ended more than an hour ago are left out.\n" +
			"RESULT is how an ended session ended (success, failure, cancelled); EXIT is its main kernel's exit code.\n" +
			"An array's listed elements are one row, NAME[first-last], with their statuses counted; --elements lists\n" +
			"arrays' elements one by one instead (and nothing else).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit must be 0 (no limit) or more, not %d", limit)
			}
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			q := url.Values{"order": {"newest"}}
			for _, s := range statuses {
				q.Add("status", s)
			}
			for _, t := range types {
				q.Add("type", t)
			}
			if !all {
				q.Set("ended_within", recentlyEnded.String())
			}
			for k, v := range map[string]string{"owner": user, "name": name, "resource_group": group} {
				if v != "" {
					q.Set(k, v)
				}
			}
			page := listPage
			if limit > 0 && limit < page {
				page = limit
			}
			q.Set("limit", strconv.Itoa(page))
			// Pages are read until the limit is met or the listing ends, so
			// --all really is everything.
			var items []json.RawMessage
			var sessions []v1.Session
			for {
				var list struct {
					Items []json.RawMessage `json:"items"`
					Next  string            `json:"next"`
				}
				if _, err := c.do(cmd.Context(), "GET", "/v1/sessions?"+q.Encode(), nil, &list); err != nil {
					return err
				}
				for _, raw := range list.Items {
					var s v1.Session
					if err := json.Unmarshal(raw, &s); err != nil {
						return fmt.Errorf("unexpected answer from GET /v1/sessions: %w", err)
					}
					items, sessions = append(items, raw), append(sessions, s)
				}
				if list.Next == "" || limit > 0 && len(sessions) >= limit {
					break
				}
				q.Set("after", list.Next)
			}
			if limit > 0 && len(sessions) > limit {
				items, sessions = items[:limit], sessions[:limit]
			}
			if o.json() {
				raw, err := json.Marshal(map[string]any{"items": items})
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), raw)
			}
			row := func(s v1.Session) []string {
				return []string{shortID(s.ID), orDash(s.Name), s.Owner, s.Type, s.Status, orDash(s.Outcome), mainExit(s),
					s.ResourceGroup, slotList(s.RequestedSlots), strconv.Itoa(s.ClusterSize), when(&s.CreatedAt)}
			}
			if elements {
				sessions = slices.DeleteFunc(sessions, func(s v1.Session) bool { return s.Array == "" })
			}
			rows := arrayRows(sessions, row, elements)
			return table(cmd.OutOrStdout(), []string{"ID", "NAME", "OWNER", "TYPE", "STATUS", "RESULT", "EXIT", "GROUP",
				"PER KERNEL", "KERNELS", "CREATED"}, rows)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&statuses, "status", nil, "only sessions in this status (repeatable)")
	f.StringArrayVar(&types, "type", nil, "only sessions of this type: interactive, batch or inference (repeatable)")
	f.IntVar(&limit, "limit", 0, "at most this many, the newest (0: no limit)")
	f.BoolVarP(&all, "all", "a", false, "also sessions that ended more than an hour ago")
	f.BoolVar(&elements, "elements", false, "list arrays' elements one by one (and only them)")
	f.StringVar(&name, "name", "", "only sessions of this name")
	f.StringVar(&user, "user", "", "admins: only this user's sessions")
	f.StringVar(&user, "owner", "", "same as --user")
	_ = f.MarkHidden("owner")
	f.StringVarP(&group, "group", "g", "", "only sessions of this resource group")
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions([]string{"interactive", "batch", "inference"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("group", completeFrom(listGroupNames))
	return cmd
}

// recentlyEnded is how long ago a session may have ended and still be
// listed without --all.
const recentlyEnded = time.Hour

// listPage is the page size ls asks for.
const listPage = 500

// shortID is the id as a table shows it: enough to name the session in
// any verb (a unique prefix) without filling the line. -o json has the
// whole id.
func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

// mainExit is the main kernel's exit code, "-" until it exited.
func mainExit(s v1.Session) string {
	for _, k := range s.Kernels {
		if k.ClusterRole == "main" && k.ExitCode != nil {
			return strconv.Itoa(*k.ExitCode)
		}
	}
	return "-"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newSessionShowCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "show SESSION",
		Short:             "Show a session and its kernels",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if done, err := showAsArray(cmd, o, args[0]); done {
				return err
			}
			return call(cmd, o, "GET", sessionPath(args[0]), nil, func(w io.Writer, s v1.Session) error {
				rows := [][]string{
					{"ID", s.ID}, {"Name", orDash(s.Name)}, {"Owner", s.Owner}, {"Type", s.Type}, {"Image", s.Image},
					{"Status", s.Status}, {"Reason", orDash(s.StatusReason)}, {"Since", when(&s.StatusChangedAt)},
					{"Created", when(&s.CreatedAt)}, {"Group", s.ResourceGroup}, {"Priority", strconv.Itoa(s.Priority)},
					{"Per kernel", slotList(s.RequestedSlots)}, {"Cluster", fmt.Sprintf("%s × %d", s.ClusterMode, s.ClusterSize)},
					{"Depends on", orDash(strings.Join(s.DependsOn, ", "))}, {"Time limit", orDash(s.TimeLimit)},
					{"Outcome", orDash(s.Outcome)},
				}
				if s.RequeuedFrom != "" {
					rows = append(rows, []string{"Requeued", "from " + s.RequeuedFrom})
				}
				for _, r := range rows {
					fmt.Fprintf(w, "%-11s %s\n", r[0]+":", r[1])
				}
				fmt.Fprintln(w)
				krows := make([][]string, len(s.Kernels))
				header := []string{"KERNEL", "ROLE", "AGENT", "STATUS", "EXIT", "REASON"}
				devices := anyKernelDevices(s.Kernels)
				if devices {
					header = append(header, "DEVICES")
				}
				for i, k := range s.Kernels {
					exit := "-"
					if k.ExitCode != nil {
						exit = strconv.Itoa(*k.ExitCode)
					}
					krows[i] = []string{k.ID, k.ClusterRole, orDash(k.Agent), k.Status, exit, orDash(k.StatusReason)}
					if devices {
						krows[i] = append(krows[i], kernelDevices(k))
					}
				}
				if err := table(w, header, krows); err != nil {
					return err
				}
				return printServicePorts(w, s)
			})
		},
	}
}

func newSessionHistoryCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "history SESSION",
		Short:             "Show what the scheduler did with a session, oldest first",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "GET", sessionPath(args[0], "/history"), nil, func(w io.Writer, h v1.List[v1.History]) error {
				rows := make([][]string, len(h.Items))
				for i, e := range h.Items {
					rows[i] = []string{when(&e.At), e.Handler, e.Result, e.From + " → " + e.To, "×" + strconv.Itoa(e.Attempt), orDash(e.Message)}
				}
				return table(w, []string{"AT", "HANDLER", "RESULT", "STATUS", "TIMES", "MESSAGE"}, rows)
			})
		},
	}
}

func newSessionWhyCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "why SESSION",
		Short:             "Say what keeps a session from starting, and what to do about it",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			var why v1.Why
			raw, err := c.do(cmd.Context(), "GET", sessionPath(args[0], "/why"), nil, &why)
			w := cmd.OutOrStdout()
			if err != nil {
				a, araw, found, aerr := asArray(cmd.Context(), c, args[0], err)
				switch {
				case aerr != nil:
					return aerr
				case !found:
					return err
				case o.json():
					return printJSON(w, araw)
				}
				return whyArray(cmd.Context(), c, w, a)
			}
			if o.json() {
				return printJSON(w, raw)
			}
			printWhy(w, why)
			return nil
		},
	}
}

// printWhy says what holds a session, from its why.
func printWhy(w io.Writer, why v1.Why) {
	switch p := why.Progress; {
	case why.Ended != nil:
		e := why.Ended
		fmt.Fprintf(w, "session ended %s at %s", why.Status, e.At.Local().Format(time.DateTime))
		if e.Outcome != "" {
			fmt.Fprintf(w, " (%s)", e.Outcome)
		}
		if e.Reason != "" {
			fmt.Fprintf(w, ": %s", e.Reason)
		}
		fmt.Fprintln(w)
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
		fmt.Fprintf(w, "estimated start: ~%s (%s)\n", estimateTime(*t, time.Now()), estimateBasis())
	}
	if f := why.FairShare; f != nil {
		fmt.Fprintln(w, fairShareLine(f))
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
		avail := fmt.Sprintf("requested %s, available %s", orDash(b.Requested), orDash(b.Available))
		if b.Held != "" {
			avail += fmt.Sprintf(" (+%s held for a reservation)", b.Held)
		}
		parts = append(parts, avail)
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
		if b.ExceedsCapacity {
			return fmt.Sprintf("it can never fit this quota: ask for less %s in all, or have an admin raise it "+
				"(sokovan policy set %s %s --max-slot %s=…)", b.Slot, owner, name, b.Slot)
		}
		return fmt.Sprintf("end another session of %s %s, ask for less %s, or have an admin raise it "+
			"(sokovan policy set %s %s --max-slot %s=…)", owner, name, b.Slot, owner, name, b.Slot)
	case "concurrency":
		return fmt.Sprintf("wait for a running session of %s %s to end, or have an admin raise max_concurrent_sessions", owner, name)
	case "capacity", "gang":
		// framework.MembersSlot: a job's gang short of members waits for
		// its submitter, and no resources freed would start it.
		if b.Kind == "gang" && b.Slot == "members" {
			return fmt.Sprintf("submit the job's other members (sokovan session create --job %s …); freeing resources "+
				"will not start it", name)
		}
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
	case "array":
		return "it starts when another element of array " + name + " ends (the array's %N cap)"
	}
	return ""
}

func newSessionRemoveCmd(o *output) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:               "rm SESSION...",
		Aliases:           []string{"delete", "terminate"},
		Short:             "End sessions (or every element of an array): PENDING ones are cancelled, others terminated",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient(cmd)
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
					// A name that is no session's may be an array's: rm
					// ends all its elements in one call.
					if a, _, found, aerr := asArray(cmd.Context(), c, id, err); found || aerr != nil {
						err = cmp.Or(aerr, removeArray(cmd.Context(), c, o, cmd.OutOrStdout(), a, force))
					}
					if err != nil {
						errs = append(errs, fmt.Errorf("%s: %w", id, err))
					}
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
	var follow bool
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "logs SESSION",
		Short: "Print a kernel's output (the main kernel unless --kernel)",
		Long: `Prints what the kernel has written so far. With -f it keeps printing what the
kernel writes until the session has ended (or Ctrl-C), asking the manager for
what is new every --poll.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listSessionIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			if poll <= 0 {
				return errors.New("--poll must be positive")
			}
			f := logFollower{c: c, id: args[0], kernel: kernel, out: cmd.OutOrStdout(), poll: poll}
			if err := arrayLogsFor(cmd.Context(), c, &f, follow); err != errNotArray {
				return err
			}
			if follow {
				err = f.follow(cmd.Context())
			} else {
				_, err = f.read(cmd.Context())
			}
			if cmd.Context().Err() != nil {
				return nil // interrupted while following: not a failure
			}
			return err
		},
	}
	cmd.Flags().StringVar(&kernel, "kernel", "", "kernel id or cluster index")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the session ends")
	cmd.Flags().DurationVar(&poll, "poll", 500*time.Millisecond, "with -f: how often to ask for new output")
	return cmd
}

// estimateBasis says what the estimate guessed: without it, an
// interactive session ahead with no time limit moves the estimate hours
// out and the user cannot tell why.
func estimateBasis() string {
	types := slices.Sorted(maps.Keys(simulate.TypicalRun))
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s %gh", t, simulate.TypicalRun[t].Hours())
	}
	return "estimate: sessions end at their time limit, or without one after " + strings.Join(parts, ", ")
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
