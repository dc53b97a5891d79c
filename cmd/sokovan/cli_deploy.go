package main

import (
	"context"
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

func deploymentPath(ref string) string { return "/v1/deployments/" + url.PathEscape(ref) }

func listDeploymentNames(ctx context.Context, c *client) ([]string, error) {
	var list v1.List[v1.Deployment]
	if _, err := c.do(ctx, "GET", "/v1/deployments", nil, &list); err != nil {
		return nil, err
	}
	out := make([]string, len(list.Items))
	for i, d := range list.Items {
		out[i] = d.Name + "\t" + d.Status
	}
	return out, nil
}

// specFlags are the flags that make a deployment's route sessions, shared
// by create and update.
type specFlags struct {
	image, cpu, mem string
	slots, env      []string
}

func (s *specFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.image, "image", "", "image each route runs")
	f.StringVar(&s.cpu, "cpu", "", "CPU cores per route, such as 1 or 0.5 (default: the group's)")
	f.StringVar(&s.mem, "mem", "", "memory per route, such as 512m or 4g (default: the group's)")
	f.StringArrayVar(&s.slots, "slot", nil, "another slot per route, NAME=QUANTITY (repeatable)")
	f.StringArrayVar(&s.env, "env", nil, "environment variable NAME=VALUE (repeatable)")
}

// resources reads --cpu, --mem and --slot; nil when none is given.
func (s *specFlags) resources() (map[string]string, error) {
	out, err := keyValues("slot", s.slots)
	if err != nil {
		return nil, err
	}
	for _, q := range []struct{ slot, v string }{{"cpu", s.cpu}, {"mem", s.mem}} {
		if q.v == "" {
			continue
		}
		if _, dup := out[q.slot]; dup {
			return nil, fmt.Errorf("--%s and --slot %s=… both set %s", q.slot, q.slot, q.slot)
		}
		out[q.slot] = q.v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func (s *specFlags) envs() (map[string]string, error) {
	if len(s.env) == 0 {
		return nil, nil
	}
	return keyValues("env", s.env)
}

// parse reads the flags create and update both take: resources, then
// environment, so with both wrong the --cpu/--mem/--slot error is the one said.
func (s *specFlags) parse() (resources, envs map[string]string, err error) {
	if resources, err = s.resources(); err != nil {
		return nil, nil, err
	}
	if envs, err = s.envs(); err != nil {
		return nil, nil, err
	}
	return resources, envs, nil
}

// autoscaleFlags are --autoscale-*, shared by create and update.
type autoscaleFlags struct {
	min, max         int
	target, cooldown string
}

func (a *autoscaleFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&a.max, "autoscale-max", 0, "autoscale: at most this many replicas (0 in update: autoscaling off)")
	f.IntVar(&a.min, "autoscale-min", 1, "autoscale: at least this many replicas")
	f.StringVar(&a.target, "autoscale-target", "", "autoscale: requests in flight per route to size for, such as 2")
	f.StringVar(&a.cooldown, "autoscale-cooldown", "", "autoscale: least time between two changes (default 60s)")
}

// request is the rule the flags give; nil when none of them was set.
func (a *autoscaleFlags) request(cmd *cobra.Command) *v1.Autoscale {
	f := cmd.Flags()
	if !f.Changed("autoscale-max") && !f.Changed("autoscale-min") && !f.Changed("autoscale-target") && !f.Changed("autoscale-cooldown") {
		return nil
	}
	return &v1.Autoscale{Min: a.min, Max: a.max, Target: a.target, Cooldown: a.cooldown}
}

func newDeployCmd() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:               "deploy",
		Aliases:           []string{"deployment", "deployments"},
		Short:             "Model-serving deployments: replicas of an inference session kept healthy behind a proxy",
		PersistentPreRunE: func(*cobra.Command, []string) error { return o.check() },
	}
	o.register(cmd)
	cmd.AddCommand(newDeployCreateCmd(&o), newDeployLsCmd(&o), newDeployShowCmd(&o), newDeployScaleCmd(&o),
		newDeployUpdateCmd(&o), newDeployRmCmd(&o), newDeployRoutesCmd(&o), newDeployHistoryCmd(&o), newDeployTokenCmd(&o))
	return cmd
}

func newDeployCreateCmd(o *output) *cobra.Command {
	var (
		spec                              specFlags
		auto                              autoscaleFlags
		replicas, surge, port, succ, fail int
		group, path                       string
		interval, timeout, delay          string
		wait                              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "create NAME --image IMG [flags] [-- COMMAND...]",
		Short: "Create a deployment",
		Long: "Create a deployment of --replicas routes, each an inference session of the image, health-checked with\n" +
			"HTTP GET --health-path on its service port. With --wait DURATION, wait until it is READY (every replica\n" +
			"HEALTHY), exiting 1 if it is not by then.",
		Example: "  sokovan deploy create echo --image http-echo --replicas 3 --cpu 1 --wait 2m\n" +
			"  curl -H \"Authorization: Bearer $SOKOVAN_TOKEN\" $SOKOVAN_ADDR/v1/deployments/echo/proxy/",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if spec.image == "" {
				return errors.New("--image is required")
			}
			resources, envs, err := spec.parse()
			if err != nil {
				return err
			}
			body := v1.CreateDeploymentRequest{Name: args[0], Image: spec.image, Resources: resources, Env: envs,
				Command: args[1:], ResourceGroup: group}
			f := cmd.Flags()
			body.Replicas = given(f, "replicas", &replicas)
			body.MaxSurge = given(f, "max-surge", &surge)
			body.Autoscale = auto.request(cmd)
			hc := v1.HealthCheck{Path: path, Port: port, Interval: interval, Timeout: timeout, InitialDelay: delay,
				SuccessThreshold: succ, FailureThreshold: fail}
			if hc != (v1.HealthCheck{}) {
				body.HealthCheck = &hc
			}
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			var d v1.Deployment
			raw, err := c.do(cmd.Context(), "POST", "/v1/deployments", body, &d)
			if err != nil {
				return err
			}
			if wait <= 0 {
				if o.json() {
					return printJSON(cmd.OutOrStdout(), raw)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s  %s  %s\n", d.ID, d.Name, d.Status)
				return nil
			}
			return waitReady(cmd, o, c, d.ID, wait)
		},
	}
	spec.register(cmd)
	auto.register(cmd)
	f := cmd.Flags()
	f.IntVar(&replicas, "replicas", 1, "routes to keep HEALTHY (0 to 64)")
	f.IntVar(&surge, "max-surge", 1, "routes a rolling update may run beyond the replicas")
	f.StringVarP(&group, "group", "g", "", "resource group (default: the manager's default)")
	f.StringVar(&path, "health-path", "", "path the health check GETs (default /health)")
	f.IntVar(&port, "health-port", 0, "service port to check and serve (default: the route's first)")
	f.StringVar(&interval, "health-interval", "", "time between checks of a route (default 10s)")
	f.StringVar(&timeout, "health-timeout", "", "time a check may take (default 5s)")
	f.StringVar(&delay, "health-initial-delay", "", "time after a route's session starts during which failed checks are not counted (default 30s); checks start at once")
	f.IntVar(&succ, "health-success-threshold", 0, "consecutive passes that make a route HEALTHY (default 1)")
	f.IntVar(&fail, "health-failure-threshold", 0, "consecutive failures that make a route UNHEALTHY (default 3)")
	f.DurationVar(&wait, "wait", 0, "wait up to this long for the deployment to be READY")
	_ = cmd.RegisterFlagCompletionFunc("group", completeFrom(listGroupNames))
	return cmd
}

// waitReady polls until the deployment is READY, printing its routes'
// states when they change.
func waitReady(cmd *cobra.Command, o *output, c *client, id string, limit time.Duration) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	progress := out
	if o.json() {
		progress = cmd.ErrOrStderr()
	}
	deadline := time.Now().Add(limit)
	last := ""
	for {
		var d v1.Deployment
		raw, err := c.do(ctx, "GET", deploymentPath(id), nil, &d)
		if err != nil {
			return err
		}
		if line := deploymentLine(d); line != last {
			fmt.Fprintln(progress, line)
			last = line
		}
		if d.Status == "READY" {
			if o.json() {
				return printJSON(out, raw)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("deployment %s is %s after %s, not READY", d.Name, d.Status, limit)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// deploymentLine sums a deployment up: its status and its routes by
// status.
// printDeploymentLine renders a deployment a command changed as its line.
func printDeploymentLine(w io.Writer, d v1.Deployment) error {
	fmt.Fprintln(w, deploymentLine(d))
	return nil
}

func deploymentLine(d v1.Deployment) string {
	counts := map[string]int{}
	var order []string
	for _, r := range d.Routes {
		if counts[r.Status] == 0 {
			order = append(order, r.Status)
		}
		counts[r.Status]++
	}
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[s], s)
	}
	routes := strings.Join(parts, ", ")
	if routes == "" {
		routes = "no routes"
	}
	return fmt.Sprintf("%s  %s  %d replicas: %s", d.Name, d.Status, d.Replicas, routes)
}

func healthyCount(d v1.Deployment) int {
	n := 0
	for _, r := range d.Routes {
		if r.Status == "HEALTHY" {
			n++
		}
	}
	return n
}

func newDeployLsCmd(o *output) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List deployments",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := "/v1/deployments"
			if all {
				path += "?all=true"
			}
			return call(cmd, o, "GET", path, nil, func(w io.Writer, list v1.List[v1.Deployment]) error {
				rows := make([][]string, len(list.Items))
				for i, d := range list.Items {
					rows[i] = []string{d.ID, d.Name, d.Status, fmt.Sprintf("%d/%d", healthyCount(d), d.Replicas),
						strconv.Itoa(d.Revision), d.Image, when(&d.CreatedAt)}
				}
				return table(w, []string{"ID", "NAME", "STATUS", "HEALTHY", "REVISION", "IMAGE", "CREATED"}, rows)
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include DESTROYED deployments")
	return cmd
}

func routeTable(w io.Writer, routes []v1.Route) error {
	rows := make([][]string, len(routes))
	for i, r := range routes {
		endpoint := r.Endpoint
		if endpoint == "" {
			endpoint = "-"
		}
		session := r.SessionStatus
		if session == "" {
			session = "-"
		}
		rows[i] = []string{r.ID, r.Status, r.SessionID, session, endpoint, strconv.Itoa(r.Revision), r.StatusReason}
	}
	return table(w, []string{"ROUTE", "STATUS", "SESSION", "SESSION STATUS", "ENDPOINT", "REV", "REASON"}, rows)
}

func newDeployShowCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "show NAME|ID",
		Short:             "Show a deployment, its routes, and what keeps a route from starting",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listDeploymentNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "GET", deploymentPath(args[0]), nil, func(w io.Writer, d v1.Deployment) error {
				fmt.Fprintf(w, "id:           %s\nname:         %s\nowner:        %s\nstatus:       %s (since %s)\n", d.ID, d.Name,
					d.Owner, d.Status, when(&d.StatusChangedAt))
				fmt.Fprintf(w, "replicas:     %d (%d HEALTHY), max surge %d\nrevision:     %d\nimage:        %s\nresources:    %s\n",
					d.Replicas, healthyCount(d), d.MaxSurge, d.Revision, d.Image, slotList(d.Resources))
				if len(d.Command) > 0 {
					fmt.Fprintf(w, "command:      %s\n", strings.Join(d.Command, " "))
				}
				hc := d.HealthCheck
				fmt.Fprintf(w, "health check: GET %s every %s (timeout %s, initial delay %s), HEALTHY after %d, UNHEALTHY after %d\n",
					hc.Path, hc.Interval, hc.Timeout, hc.InitialDelay, hc.SuccessThreshold, hc.FailureThreshold)
				if a := d.Autoscale; a != nil {
					fmt.Fprintf(w, "autoscale:    %d to %d replicas at %s requests in flight per route, cooldown %s\n",
						a.Min, a.Max, a.Target, a.Cooldown)
				}
				if d.StartFailures > 0 {
					fmt.Fprintf(w, "backing off:  %d routes failed to start in a row; next start after %s\n", d.StartFailures, when(d.NextStartAt))
				}
				fmt.Fprintln(w)
				if err := routeTable(w, d.Routes); err != nil {
					return err
				}
				for _, r := range d.Routes {
					for _, b := range r.Blockers {
						fmt.Fprintf(w, "route %s waits: %s: %s\n", r.ID, b.Kind, b.Message)
					}
				}
				return nil
			})
		},
	}
}

func newDeployScaleCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "scale NAME|ID REPLICAS",
		Short:             "Set the number of replicas (0 to 64)",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeFrom(listDeploymentNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[1])
			if err != nil {
				return fmt.Errorf("REPLICAS must be a number, not %q", args[1])
			}
			return call(cmd, o, "PATCH", deploymentPath(args[0]), v1.UpdateDeploymentRequest{Replicas: &n}, printDeploymentLine)
		},
	}
}

func newDeployUpdateCmd(o *output) *cobra.Command {
	var (
		spec  specFlags
		auto  autoscaleFlags
		surge int
	)
	cmd := &cobra.Command{
		Use:   "update NAME|ID [--image IMG] [--cpu Q] [--mem Q] [--env K=V]... [-- COMMAND...]",
		Short: "Roll out a new spec, one route at a time; change max surge or autoscaling",
		Long: "A rolling update: new routes start (at most --max-surge beyond the replicas) and an old one ends only\n" +
			"once a new one is HEALTHY. If a new route fails to start or turns UNHEALTHY the rollout stops and the old\n" +
			"routes keep serving. --env replaces the whole environment.",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeFrom(listDeploymentNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			resources, envs, err := spec.parse()
			if err != nil {
				return err
			}
			body := v1.UpdateDeploymentRequest{Image: spec.image, Resources: resources, Env: envs}
			if len(args) > 1 {
				body.Command = args[1:]
			}
			body.MaxSurge = given(cmd.Flags(), "max-surge", &surge)
			body.Autoscale = auto.request(cmd)
			return call(cmd, o, "PATCH", deploymentPath(args[0]), body, func(w io.Writer, d v1.Deployment) error {
				fmt.Fprintf(w, "%s  revision %d\n", deploymentLine(d), d.Revision)
				return nil
			})
		},
	}
	spec.register(cmd)
	auto.register(cmd)
	cmd.Flags().IntVar(&surge, "max-surge", 1, "routes the rollout may run beyond the replicas")
	return cmd
}

func newDeployRmCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "rm NAME|ID",
		Aliases:           []string{"destroy", "delete"},
		Short:             "Destroy a deployment: every route's session ends",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listDeploymentNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "DELETE", deploymentPath(args[0]), nil, printDeploymentLine)
		},
	}
}

func newDeployRoutesCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "routes NAME|ID",
		Short:             "List a deployment's routes",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listDeploymentNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "GET", deploymentPath(args[0]), nil, func(w io.Writer, d v1.Deployment) error {
				return routeTable(w, d.Routes)
			})
		},
	}
}

func newDeployHistoryCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "history NAME|ID",
		Short:             "The deployment's and its routes' handler outcomes, oldest first",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listDeploymentNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "GET", deploymentPath(args[0])+"/history", nil, func(w io.Writer, l v1.List[v1.DeploymentHistory]) error {
				rows := make([][]string, len(l.Items))
				for i, h := range l.Items {
					route := h.Route
					if route == "" {
						route = "-"
					} else if len(route) > 8 {
						route = route[:8]
					}
					rows[i] = []string{when(&h.At), route, h.Handler, h.Result, orDash(h.From) + " → " + h.To, strconv.Itoa(h.Attempt), h.Message}
				}
				return table(w, []string{"AT", "ROUTE", "HANDLER", "RESULT", "MOVE", "TIMES", "MESSAGE"}, rows)
			})
		},
	}
}

func newDeployTokenCmd(o *output) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "token",
		Aliases: []string{"tokens"},
		Short:   "Tokens that open one deployment's proxy and nothing else",
		Long: "A deployment token is for the clients of a deployment: it opens /v1/deployments/NAME|ID/proxy/… of that\n" +
			"deployment only, where a user's token opens everything its user may do. It is shown once, when created;\n" +
			"the manager keeps only its hash.",
	}
	cmd.AddCommand(newDeployTokenCreateCmd(o), newDeployTokenLsCmd(o), newDeployTokenRmCmd(o))
	return cmd
}

func tokensPath(ref string) string { return deploymentPath(ref) + "/tokens" }

func newDeployTokenCreateCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:   "create NAME|ID",
		Short: "Create a token for the deployment's proxy; it is printed this once",
		Example: "  TOKEN=$(sokovan deploy token create echo -o json | jq -r .token)\n" +
			"  curl -H \"Authorization: Bearer $TOKEN\" $SOKOVAN_ADDR/v1/deployments/echo/proxy/",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listDeploymentNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "POST", tokensPath(args[0]), nil, func(w io.Writer, t v1.DeploymentToken) error {
				fmt.Fprintf(w, "id:     %s\ntoken:  %s\n", t.ID, t.Token)
				// On stderr, so that stdout is only what a script keeps.
				fmt.Fprintln(cmd.ErrOrStderr(), "Keep the token now: it is not shown again. Revoke it with "+
					"`sokovan deploy token rm "+args[0]+" "+t.ID+"`.")
				return nil
			})
		},
	}
}

func newDeployTokenLsCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "ls NAME|ID",
		Aliases:           []string{"list"},
		Short:             "List the deployment's tokens, revoked ones too",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listDeploymentNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "GET", tokensPath(args[0]), nil, func(w io.Writer, l v1.List[v1.DeploymentToken]) error {
				rows := make([][]string, len(l.Items))
				for i, t := range l.Items {
					status := "valid"
					if t.RevokedAt != nil {
						status = "revoked"
					}
					rows[i] = []string{t.ID, status, when(&t.CreatedAt), when(t.RevokedAt)}
				}
				return table(w, []string{"ID", "STATUS", "CREATED", "REVOKED"}, rows)
			})
		},
	}
}

func newDeployTokenRmCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME|ID TOKEN_ID",
		Aliases: []string{"revoke"},
		Short:   "Revoke a deployment token",
		Long: "Revoke a deployment token by its id (from `sokovan deploy token ls`). A manager may still accept it for\n" +
			"a fraction of a second, as long as it trusts what it read of a proxy request's token.",
		Args: cobra.ExactArgs(2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return completeFrom(listDeploymentNames)(cmd, args, toComplete)
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "DELETE", tokensPath(args[0])+"/"+url.PathEscape(args[1]), nil,
				func(w io.Writer, t v1.DeploymentToken) error {
					fmt.Fprintf(w, "%s  revoked %s\n", t.ID, when(t.RevokedAt))
					return nil
				})
		},
	}
}
