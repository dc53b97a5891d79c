package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

func listAgentIDs(ctx context.Context, c *client) ([]string, error) {
	var list v1.List[v1.Agent]
	if _, err := c.do(ctx, "GET", "/v1/agents", nil, &list); err != nil {
		return nil, err
	}
	out := make([]string, len(list.Items))
	for i, a := range list.Items {
		out[i] = a.ID + "\t" + a.Status + " " + a.ResourceGroup
	}
	return out, nil
}

func newAgentCmd() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:               "agent",
		Aliases:           []string{"agents"},
		Short:             "Run an agent daemon; list agents, cordon, uncordon, drain and remove them (admin)",
		PersistentPreRunE: func(*cobra.Command, []string) error { return o.check() },
	}
	o.register(cmd)
	cmd.AddCommand(newAgentDaemonCmd())
	var all bool
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List agents (removed, TERMINATED ones only with --all)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := "/v1/agents"
			if all {
				path += "?all=true"
			}
			return call(cmd, &o, "GET", path, nil, func(w io.Writer, list v1.List[v1.Agent]) error {
				return agentTable(w, list.Items)
			})
		},
	}
	ls.Flags().BoolVar(&all, "all", false, "also list TERMINATED agents (removed with agent rm)")
	cmd.AddCommand(ls, newAgentShowCmd(&o), newAgentTokenCmd(&o))
	cmd.AddCommand(&cobra.Command{
		Use:     "rm ID",
		Aliases: []string{"remove", "purge"},
		Short:   "Remove a LOST agent that holds no kernel: it becomes TERMINATED",
		Long: "Remove an agent whose node is gone for good, as Nomad's node purge: it becomes TERMINATED, no longer\n" +
			"counts against removing its resource group and leaves agent ls (see --all). Only a LOST agent that holds\n" +
			"no kernel qualifies: stop an ALIVE one first, and wait for the manager to give up a LOST one's kernels\n" +
			"(heartbeat_timeout + lost_grace after it fell silent). If the agent comes back, it registers again.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listAgentIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, &o, "DELETE", "/v1/agents/"+url.PathEscape(args[0]), nil, func(w io.Writer, a v1.Agent) error {
				fmt.Fprintf(w, "agent %s %s\n", a.ID, a.Status)
				return nil
			})
		},
	})
	for _, v := range []struct{ verb, short, done string }{
		{"cordon", "Place nothing new on the agent", "cordoned"},
		{"uncordon", "Place kernels on the agent again", "uncordoned"},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:               v.verb + " ID",
			Short:             v.short,
			Args:              cobra.ExactArgs(1),
			ValidArgsFunction: completeFrom(listAgentIDs),
			RunE: func(cmd *cobra.Command, args []string) error {
				return call(cmd, &o, "POST", "/v1/agents/"+url.PathEscape(args[0])+"/"+v.verb, nil, func(w io.Writer, a v1.Agent) error {
					fmt.Fprintf(w, "agent %s %s (schedulable: %v, kernels: %d)\n", a.ID, v.done, a.Schedulable, a.KernelCount)
					return nil
				})
			},
		})
	}
	cmd.AddCommand(newAgentDrainCmd(&o))
	return cmd
}

// agentTable lists agents, one a row. The manager sends an agent's RPC
// address to admins only, so the ADDRESS column shows only when there is
// one to show.
func agentTable(w io.Writer, agents []v1.Agent) error {
	header := []string{"ID", "GROUP", "STATUS", "SCHEDULABLE", "ARCH", "RUNTIME", "FREE", "CAPACITY", "KERNELS", "HEARTBEAT"}
	addresses := slices.ContainsFunc(agents, func(a v1.Agent) bool { return a.Address != "" })
	if addresses {
		header = append(header, "ADDRESS")
	}
	devices := slices.ContainsFunc(agents, func(a v1.Agent) bool { return len(a.Devices) > 0 })
	if devices {
		header = append(header, "DEVICES")
	}
	rows := make([][]string, len(agents))
	for i, a := range agents {
		sched := "yes"
		switch {
		case a.Drain != nil && a.Drain.Drained:
			sched = "no (drained)"
		case a.Drain != nil:
			sched = "no (draining)"
		case !a.Schedulable:
			sched = "no (cordoned)"
		}
		kernels := strconv.Itoa(a.KernelCount)
		if a.MaxKernels > 0 {
			kernels += "/" + strconv.Itoa(a.MaxKernels)
		}
		rows[i] = []string{a.ID, a.ResourceGroup, a.Status, sched, a.Architecture, orDash(a.Runtime), slotList(a.FreeSlots),
			slotList(a.AvailableSlots), kernels, when(a.LastHeartbeat)}
		if addresses {
			rows[i] = append(rows[i], orDash(a.Address))
		}
		if devices {
			rows[i] = append(rows[i], deviceSummary(a))
		}
	}
	return table(w, header, rows)
}

func listGroupNames(ctx context.Context, c *client) ([]string, error) {
	var list v1.List[v1.Group]
	if _, err := c.do(ctx, "GET", "/v1/resource-groups", nil, &list); err != nil {
		return nil, err
	}
	out := make([]string, len(list.Items))
	for i, g := range list.Items {
		out[i] = g.Name + "\t" + g.State
	}
	return out, nil
}

// timeoutList is a group's timeouts in lifecycle order, for printing.
func timeoutList(t v1.Timeouts) [][2]string {
	return [][2]string{{"pending", t.Pending}, {"scheduled", t.Scheduled}, {"preparing", t.Preparing},
		{"prepared", t.Prepared}, {"creating", t.Creating}, {"terminating", t.Terminating}}
}

// timeoutsRequest turns --timeout PHASE=DURATION pairs into the request;
// the manager checks the durations.
func timeoutsRequest(pairs map[string]string) (*v1.TimeoutsRequest, error) {
	var t v1.TimeoutsRequest
	for phase, d := range pairs {
		switch phase {
		case "pending":
			t.Pending = &d
		case "scheduled":
			t.Scheduled = &d
		case "preparing":
			t.Preparing = &d
		case "prepared":
			t.Prepared = &d
		case "creating":
			t.Creating = &d
		case "terminating":
			t.Terminating = &d
		default:
			return nil, fmt.Errorf("--timeout: unknown phase %q (want pending, scheduled, preparing, prepared, creating or terminating)", phase)
		}
	}
	return &t, nil
}

// printGroup writes a group as `rg show` shows it.
func printGroup(w io.Writer, g v1.Group) {
	types := "all"
	if len(g.AllowedTypes) > 0 {
		types = strings.Join(g.AllowedTypes, ", ")
	}
	hol := g.HeadOfLine
	if hol == "reserve" {
		hol = fmt.Sprintf("%s (depth %d)", hol, g.ReservationDepth)
	}
	fmt.Fprintf(w, "Name:          %s\nState:         %s\nSequencer:     %s\nSelector:      %s\nHead of line:  %s\n"+
		"Max retries:   %d\nSession types: %s\nDefault slots: %s\nMin slots:     %s\nTimeouts:\n", g.Name, g.State,
		g.Sequencer, g.Selector, hol, g.MaxRetries, types, slotList(g.DefaultSlots), slotList(g.MinSlots))
	for _, p := range timeoutList(g.Timeouts) {
		fmt.Fprintf(w, "  %-12s %s\n", p[0]+":", p[1])
	}
	fmt.Fprintf(w, "Time limit:    default %s, max %s\nIdle timeout:  %s\n",
		g.DefaultTimeLimit, g.MaxTimeLimit, g.IdleTimeout)
	printPreemption(w, g.Preemption)
	printFairShare(w, g)
}

func newRGCmd() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:               "rg",
		Aliases:           []string{"resource-group", "resource-groups"},
		Short:             "List, show and configure resource groups",
		PersistentPreRunE: func(*cobra.Command, []string) error { return o.check() },
	}
	o.register(cmd)
	cmd.AddCommand(newRGListCmd(&o), newRGShowCmd(&o), newRGSetCmd(&o), newRGRmCmd(&o))
	return cmd
}

func newRGListCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List resource groups",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(cmd, o, "GET", "/v1/resource-groups", nil, func(w io.Writer, list v1.List[v1.Group]) error {
				rows := make([][]string, len(list.Items))
				for i, g := range list.Items {
					rows[i] = []string{g.Name, g.State, g.Sequencer, g.Selector, g.HeadOfLine, strconv.Itoa(g.MaxRetries)}
				}
				return table(w, []string{"NAME", "STATE", "SEQUENCER", "SELECTOR", "HEAD OF LINE", "MAX RETRIES"}, rows)
			})
		},
	}
}

func newRGShowCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "show NAME",
		Short:             "Show a resource group",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listGroupNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "GET", "/v1/resource-groups/"+url.PathEscape(args[0]), nil, func(w io.Writer, g v1.Group) error {
				printGroup(w, g)
				return nil
			})
		},
	}
}

// rgSetFlags are `rg set`'s flags; only those given are sent.
type rgSetFlags struct {
	state, seq, sel, hol string
	retries, depth       int
	timeouts, types      []string
	defLimit, maxLimit   string
	idle                 string
	pre                  preemptFlags
	fair                 fairShareFlags
}

func newRGSetCmd(o *output) *cobra.Command {
	var rf rgSetFlags
	set := &cobra.Command{
		Use:   "set NAME [flags]",
		Short: "Create a resource group or change some of its settings (admin)",
		Long:  "Settings not given keep their value (or the default, for a new group).",
		Example: "  sokovan rg set default --sequencer drf --selector dispersed\n" +
			"  sokovan rg set gpu --state STOPPED --timeout pending=1h",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listGroupNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := rf.request(cmd.Flags(), args[0])
			if err != nil {
				return err
			}
			return call(cmd, o, "PUT", "/v1/resource-groups/"+url.PathEscape(args[0]), body, func(w io.Writer, g v1.Group) error {
				printGroup(w, g)
				return nil
			})
		},
	}
	rf.register(set)
	return set
}

func (rf *rgSetFlags) register(set *cobra.Command) {
	sf := set.Flags()
	sf.StringVar(&rf.state, "state", "", "ACTIVE or STOPPED (to drain a group, rg rm)")
	sf.StringVar(&rf.seq, "sequencer", "", "queue order: fifo, lifo, drf or fairshare")
	sf.StringVar(&rf.sel, "selector", "", "agent choice: concentrated, dispersed or round-robin")
	sf.StringVar(&rf.hol, "head-of-line", "", "reserve (the first sessions that do not fit reserve slots; later ones "+
		"backfill only where they cannot delay them), skip (later sessions may pass one that does not fit) or block")
	sf.IntVar(&rf.depth, "reservation-depth", 0, "how many waiting sessions hold reservations at once under reserve (0 to 100)")
	sf.IntVar(&rf.retries, "max-retries", 0, "failed attempts per phase before giving up")
	sf.StringSliceVar(&rf.types, "allowed-types", nil, "session types the group runs (comma-separated; empty: all)")
	sf.StringVar(&rf.defLimit, "default-time-limit", "", "time limit of sessions that ask for none, such as 4h (0s: none)")
	sf.StringVar(&rf.maxLimit, "max-time-limit", "", "the most time limit a session may ask for, such as 24h (0s: no cap)")
	sf.StringVar(&rf.idle, "idle-timeout", "", "end interactive sessions unused this long, such as 30m (0s: off)")
	rf.pre.register(sf)
	rf.fair.register(sf)
	sf.StringArrayVar(&rf.timeouts, "timeout", nil, "PHASE=DURATION, such as pending=1h or creating=10m (0s: no bound; repeatable)")
	_ = set.RegisterFlagCompletionFunc("state", cobra.FixedCompletions([]string{"ACTIVE", "STOPPED"}, cobra.ShellCompDirectiveNoFileComp))
	_ = set.RegisterFlagCompletionFunc("sequencer", cobra.FixedCompletions([]string{"fifo", "lifo", "drf", "fairshare"}, cobra.ShellCompDirectiveNoFileComp))
	_ = set.RegisterFlagCompletionFunc("selector", cobra.FixedCompletions([]string{"concentrated", "dispersed", "round-robin"}, cobra.ShellCompDirectiveNoFileComp))
	_ = set.RegisterFlagCompletionFunc("head-of-line", cobra.FixedCompletions([]string{"reserve", "skip", "block"}, cobra.ShellCompDirectiveNoFileComp))
}

// request is the change to group name that the given flags ask for.
func (rf *rgSetFlags) request(f *pflag.FlagSet, name string) (v1.GroupRequest, error) {
	var body v1.GroupRequest
	if f.Changed("state") {
		up := strings.ToUpper(rf.state)
		if up == domain.GroupDraining.String() {
			// DRAINING is seed 003's Remove, a one-way door: rm says
			// what it does and asks first.
			return body, fmt.Errorf("--state: DRAINING cannot be undone; drain and remove the group with `sokovan rg rm %s`", name)
		}
		body.State = &up
	}
	body.Sequencer = given(f, "sequencer", &rf.seq)
	body.Selector = given(f, "selector", &rf.sel)
	body.HeadOfLine = given(f, "head-of-line", &rf.hol)
	body.ReservationDepth = given(f, "reservation-depth", &rf.depth)
	body.MaxRetries = given(f, "max-retries", &rf.retries)
	body.AllowedTypes = given(f, "allowed-types", &rf.types)
	body.DefaultTimeLimit = given(f, "default-time-limit", &rf.defLimit)
	body.MaxTimeLimit = given(f, "max-time-limit", &rf.maxLimit)
	body.IdleTimeout = given(f, "idle-timeout", &rf.idle)
	body.Preemption = rf.pre.request(f)
	var err error
	if body.FairShare, err = rf.fair.request(f); err != nil {
		return body, err
	}
	if len(rf.timeouts) > 0 {
		pairs, err := keyValues("timeout", rf.timeouts)
		if err != nil {
			return body, err
		}
		if body.Timeouts, err = timeoutsRequest(pairs); err != nil {
			return body, err
		}
	}
	return body, nil
}

func newUserCmd() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:               "user",
		Aliases:           []string{"users"},
		Short:             "Manage users (admin)",
		PersistentPreRunE: func(*cobra.Command, []string) error { return o.check() },
	}
	o.register(cmd)
	var role, project, dom string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a user and print its token (shown once)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := v1.CreateUserRequest{Name: args[0], Role: role, Project: project, Domain: dom}
			return call(cmd, &o, "POST", "/v1/users", body, func(w io.Writer, u v1.NewUser) error {
				fmt.Fprintf(w, "created user %s (%s, project %s, domain %s)\ntoken (shown only now): %s\n",
					u.Name, u.Role, u.Project, u.Domain, u.Token)
				return nil
			})
		},
	}
	create.Flags().StringVar(&role, "role", "user", "admin or user")
	create.Flags().StringVar(&project, "project", "", "project (default: default)")
	create.Flags().StringVar(&dom, "domain", "", "domain (default: default)")
	_ = create.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"admin", "user"}, cobra.ShellCompDirectiveNoFileComp))
	list := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List users by name",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(cmd, &o, "GET", "/v1/users", nil, func(w io.Writer, l v1.List[v1.User]) error {
				rows := make([][]string, len(l.Items))
				for i, u := range l.Items {
					rows[i] = []string{u.Name, u.Role, u.Project, u.Domain, when(&u.CreatedAt)}
				}
				return table(w, []string{"NAME", "ROLE", "PROJECT", "DOMAIN", "CREATED"}, rows)
			})
		},
	}
	cmd.AddCommand(create, list, newUserTokenCmd(&o))
	return cmd
}

// newUserTokenCmd is `sokovan user token [NAME]`: a new token replaces
// every token of the caller, or as an admin of NAME. Rotating one's own
// saved login updates the saved token too.
func newUserTokenCmd(o *output) *cobra.Command {
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "token [NAME]",
		Short: "Replace your tokens (an admin: NAME's) with a new one, printed once; the old ones stop working",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl < 0 || (cmd.Flags().Changed("ttl") && ttl == 0) {
				return fmt.Errorf("--ttl %s: want a positive duration such as 720h (leave it out for a token that never expires)", ttl)
			}
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			path := "/v1/me/token"
			if len(args) == 1 {
				path = "/v1/users/" + url.PathEscape(args[0]) + "/token"
			}
			var body any
			if ttl > 0 {
				body = v1.TokenRequest{TTL: ttl.String()}
			}
			var u v1.NewUser
			raw, err := c.do(cmd.Context(), "POST", path, body, &u)
			if err != nil {
				return err
			}
			saved := ""
			if cfg, err := loadConfig(); err == nil && len(args) == 0 && os.Getenv("SOKOVAN_TOKEN") == "" && cfg.Token != "" {
				cfg.Token = u.Token
				if where, err := saveConfig(cfg); err == nil {
					saved = " (saved to " + where + ")"
				}
			}
			if o.json() {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			expiry := "it does not expire"
			if u.ExpiresAt != nil {
				expiry = "it expires at " + u.ExpiresAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "new token for %s, shown only now%s; every older one has stopped working; %s:\n%s\n",
				u.Name, saved, expiry, u.Token)
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "how long the new token works, such as 720h; after that it gets 401 "+
		"saying it expired (default: it never expires)")
	return cmd
}

func newPolicyCmd() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:               "policy",
		Aliases:           []string{"policies"},
		Short:             "Set and show resource policies of users, projects and domains (admin)",
		PersistentPreRunE: func(*cobra.Command, []string) error { return o.check() },
	}
	o.register(cmd)
	printPolicy := func(w io.Writer, p v1.Policy) {
		limit := func(n int) string {
			if n == 0 {
				return "no limit"
			}
			return strconv.Itoa(n)
		}
		slots := slotList(p.MaxSlots)
		if len(p.MaxSlots) == 0 {
			slots = "no limit"
		}
		fmt.Fprintf(w, "%s %s: max slots %s; concurrent sessions %s; pending sessions %s\n", p.Scope, p.Name, slots,
			limit(p.MaxConcurrentSessions), limit(p.MaxPendingSessions))
	}
	var (
		slots           []string
		conc, pend      int
		scopeCompletion = cobra.FixedCompletions([]string{"user", "project", "domain"}, cobra.ShellCompDirectiveNoFileComp)
	)
	set := &cobra.Command{
		Use:   "set SCOPE NAME [--max-slot SLOT=Q]... [--max-concurrent N] [--max-pending N]",
		Short: "Replace the policy of a user, project or domain",
		Long:  "SCOPE is user, project or domain. Slots not named are unlimited; 0 sessions is no limit.",
		Args:  cobra.ExactArgs(2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return scopeCompletion(cmd, args, s)
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			limits, err := keyValues("max-slot", slots)
			if err != nil {
				return err
			}
			body := v1.PolicyRequest{MaxSlots: limits, MaxConcurrentSessions: conc, MaxPendingSessions: pend}
			return call(cmd, &o, "PUT", "/v1/policies/"+url.PathEscape(args[0])+"/"+url.PathEscape(args[1]), body,
				func(w io.Writer, p v1.Policy) error {
					printPolicy(w, p)
					return nil
				})
		},
	}
	set.Flags().StringArrayVar(&slots, "max-slot", nil, "most of a slot in use at once, SLOT=QUANTITY (repeatable)")
	set.Flags().IntVar(&conc, "max-concurrent", 0, "most sessions holding resources at once (0: no limit)")
	set.Flags().IntVar(&pend, "max-pending", 0, "most PENDING sessions; more are refused at submit (0: no limit)")
	show := &cobra.Command{
		Use:   "show SCOPE NAME",
		Short: "Show a policy",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, &o, "GET", "/v1/policies/"+url.PathEscape(args[0])+"/"+url.PathEscape(args[1]), nil, func(w io.Writer, p v1.Policy) error {
				printPolicy(w, p)
				return nil
			})
		},
	}
	cmd.AddCommand(set, show)
	return cmd
}

func newLoginCmd() *cobra.Command {
	var (
		addr, token string
		o           output
	)
	cmd := &cobra.Command{
		Use:   "login [--addr URL] [--token TOKEN]",
		Short: "Check a token against a manager and save both for later commands",
		Long: "Saves the address, the token and the CA (--ca) in a file only you can read (" + "<config dir>/sokovan/config.json" + ").\n" +
			"Without --token, the token is read from SOKOVAN_TOKEN or, failing that, from standard input.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return err
			}
			if addr == "" {
				addr = os.Getenv("SOKOVAN_ADDR")
			}
			if addr == "" {
				cfg, _ := loadConfig()
				addr = cfg.Addr
			}
			if addr == "" {
				addr = defaultAddr
			}
			if token == "" {
				token = os.Getenv("SOKOVAN_TOKEN")
			}
			if token == "" {
				fmt.Fprint(cmd.ErrOrStderr(), "token: ")
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return err
				}
				token = strings.TrimSpace(line)
			}
			if token == "" {
				return errors.New("no token given")
			}
			addr, err := managerAddr(addr)
			if err != nil {
				return err
			}
			cfg, _ := loadConfig()
			ca := absPath(caFile(cmd, cfg.CA))
			c, err := dial(addr, token, ca)
			if err != nil {
				return err
			}
			var me v1.User
			raw, err := c.do(cmd.Context(), "GET", "/v1/me", nil, &me)
			if err != nil {
				return err
			}
			path, err := saveConfig(clientConfig{Addr: c.addr, Token: token, CA: ca})
			if err != nil {
				return fmt.Errorf("save login: %w", err)
			}
			if o.json() {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged in to %s as %s (%s); saved in %s\n", c.addr, me.Name, me.Role, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "manager URL (default: SOKOVAN_ADDR, the saved one, or "+defaultAddr+")")
	cmd.Flags().StringVar(&token, "token", "", "API token")
	o.register(cmd)
	return cmd
}
