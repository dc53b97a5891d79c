package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/simulate"
)

// estimateFrom loads every resource group of the manager at addr through
// its API (an admin token sees every session) and prints each pending
// session's estimated start: the replay the manager's why runs, made
// here, so a site can try it without a manager that has it.
func estimateFrom(ctx context.Context, w io.Writer, addr string, reg *domain.Registry) error {
	c, err := newClient(nil)
	if err != nil {
		return err
	}
	c.addr = strings.TrimRight(addr, "/")
	var groups v1.List[v1.Group]
	if _, err := c.do(ctx, "GET", "/v1/resource-groups", nil, &groups); err != nil {
		return err
	}
	now := time.Now()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSESSION\tOWNER\tQUEUED SINCE\tESTIMATED START")
	for _, g := range groups.Items {
		live, err := loadLive(ctx, c, reg, g, now)
		if err != nil {
			return fmt.Errorf("group %s: %w", g.Name, err)
		}
		starts, err := simulate.Estimate(ctx, live, 0)
		if err != nil {
			return fmt.Errorf("group %s: %w", g.Name, err)
		}
		for _, p := range live.Pending {
			est := "none (cannot start, or not within a week)"
			if t, ok := starts[p.Session.ID]; ok {
				est = "~" + estimateTime(t, now) + " (estimate)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.Name, p.Session.ID, p.Session.Owner.User,
				p.Session.CreatedAt.Local().Format(time.DateTime), est)
		}
	}
	return tw.Flush()
}

// loadLive reads one group as simulate.LoadLive reads a store, from the
// API's shapes, with the same expected run times (simulate.ExpectedRun).
func loadLive(ctx context.Context, c *client, reg *domain.Registry, g v1.Group, now time.Time) (simulate.Live, error) {
	group, err := groupIn(reg, g)
	if err != nil {
		return simulate.Live{}, err
	}
	live := simulate.Live{Now: now, Slots: reg, Group: group}
	var agents v1.List[v1.Agent]
	if _, err := c.do(ctx, "GET", "/v1/agents?resource_group="+url.QueryEscape(g.Name), nil, &agents); err != nil {
		return live, err
	}
	for _, a := range agents.Items {
		capacity, err := reg.ParseSlots(a.AvailableSlots)
		if err != nil {
			return live, fmt.Errorf("agent %s: %w", a.ID, err)
		}
		st, err := domain.ParseAgentStatus(a.Status)
		if err != nil {
			return live, fmt.Errorf("agent %s: %w", a.ID, err)
		}
		live.Agents = append(live.Agents, domain.Agent{ID: domain.AgentID(a.ID), ResourceGroup: g.Name, Status: st,
			Schedulable: a.Schedulable, Architecture: a.Architecture, Capacity: capacity, MaxKernels: a.MaxKernels})
	}
	owners := map[[2]string]bool{}
	q := url.Values{"resource_group": {g.Name}}
	for _, st := range domain.SessionStatuses() {
		if st == domain.SessionPending || st.HoldsResources() {
			q.Add("status", st.String())
		}
	}
	for after := ""; ; {
		if after != "" {
			q.Set("after", after)
		}
		var page v1.SessionPage
		if _, err := c.do(ctx, "GET", "/v1/sessions?"+q.Encode(), nil, &page); err != nil {
			return live, err
		}
		for _, s := range page.Items {
			ls, err := sessionIn(reg, s, now)
			if err != nil {
				return live, err
			}
			if ls.Session.Status == domain.SessionPending {
				live.Pending = append(live.Pending, ls)
			} else {
				live.Running = append(live.Running, ls)
			}
			for _, o := range [][2]string{{"user", s.Owner}, {"project", s.Project}, {"domain", s.Domain}} {
				owners[o] = true
			}
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	if live.Arrays, err = cappedArraysOf(ctx, c, live.Pending); err != nil {
		return live, err
	}
	for _, o := range slices.SortedFunc(func(yield func([2]string) bool) {
		for o := range owners {
			if !yield(o) {
				return
			}
		}
	}, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) }) {
		var p v1.Policy
		_, err := c.do(ctx, "GET", "/v1/policies/"+o[0]+"/"+url.PathEscape(o[1]), nil, &p)
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			continue
		}
		if err != nil {
			return live, err
		}
		maxSlots, err := reg.ParseSlots(p.MaxSlots)
		if err != nil {
			return live, fmt.Errorf("policy %s/%s: %w", o[0], o[1], err)
		}
		limits := domain.Unlimited(reg.Len())
		for name := range p.MaxSlots {
			if id, ok := reg.Lookup(name); ok {
				limits[id] = maxSlots[id]
			}
		}
		live.Policies = append(live.Policies, domain.Policy{Scope: domain.PolicyScope(o[0]), Name: o[1], MaxSlots: limits,
			MaxConcurrentSessions: p.MaxConcurrentSessions, MaxPendingSessions: p.MaxPendingSessions})
	}
	return live, nil
}

// cappedArraysOf reads the capped arrays of the pending elements, so the
// replay holds their caps as the manager's does; an uncapped array's
// elements schedule as sessions of their own.
func cappedArraysOf(ctx context.Context, c *client, pending []simulate.LiveSession) ([]domain.Array, error) {
	var out []domain.Array
	seen := map[domain.ArrayID]bool{}
	for _, p := range pending {
		id := p.Session.Array
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		var a v1.Array
		if _, err := c.do(ctx, "GET", "/v1/arrays/"+url.PathEscape(string(id)), nil, &a); err != nil {
			return nil, fmt.Errorf("array %s: %w", id, err)
		}
		if a.MaxRunning > 0 {
			out = append(out, domain.Array{ID: id, Name: a.Name, Owner: p.Session.Owner, Spec: a.Spec, Count: a.Count,
				MaxRunning: a.MaxRunning, CreatedAt: a.CreatedAt})
		}
	}
	return out, nil
}

func groupIn(reg *domain.Registry, g v1.Group) (domain.ResourceGroup, error) {
	state, err := domain.ParseGroupState(g.State)
	if err != nil {
		return domain.ResourceGroup{}, err
	}
	hol, err := domain.ParseHeadOfLine(g.HeadOfLine)
	if err != nil {
		return domain.ResourceGroup{}, err
	}
	dur := func(s string) time.Duration {
		d, _ := time.ParseDuration(s) // the API writes Go durations; "" or "0s" is unbounded
		return d
	}
	def, err := reg.ParseSlots(g.DefaultSlots)
	if err != nil {
		return domain.ResourceGroup{}, err
	}
	minimum, err := reg.ParseSlots(g.MinSlots)
	if err != nil {
		return domain.ResourceGroup{}, err
	}
	out := domain.ResourceGroup{Name: g.Name, State: state, Sequencer: g.Sequencer, Selector: g.Selector, HeadOfLine: hol,
		ReservationDepth: g.ReservationDepth, MaxRetries: g.MaxRetries, DefaultSlots: def, MinSlots: minimum,
		Timeouts: domain.Timeouts{Pending: dur(g.Timeouts.Pending), Scheduled: dur(g.Timeouts.Scheduled),
			Preparing: dur(g.Timeouts.Preparing), Prepared: dur(g.Timeouts.Prepared), Creating: dur(g.Timeouts.Creating),
			Terminating: dur(g.Timeouts.Terminating)},
		DefaultTimeLimit: dur(g.DefaultTimeLimit), MaxTimeLimit: dur(g.MaxTimeLimit), IdleTimeout: dur(g.IdleTimeout)}
	for _, t := range g.AllowedTypes {
		out.AllowedTypes = append(out.AllowedTypes, domain.SessionType(t))
	}
	return out, nil
}

// sessionIn turns a listed session into the estimator's, with its expected
// end or run time.
func sessionIn(reg *domain.Registry, s v1.Session, now time.Time) (simulate.LiveSession, error) {
	st, err := domain.ParseSessionStatus(s.Status)
	if err != nil {
		return simulate.LiveSession{}, fmt.Errorf("session %s: %w", s.ID, err)
	}
	req, err := reg.ParseSlots(s.RequestedSlots)
	if err != nil {
		return simulate.LiveSession{}, fmt.Errorf("session %s: %w", s.ID, err)
	}
	sess := domain.Session{ID: domain.SessionID(s.ID), Name: s.Name,
		Owner: domain.Owner{User: s.Owner, Project: s.Project, Domain: s.Domain}, Type: domain.SessionType(s.Type),
		Image: s.Image, Architecture: s.Architecture, ResourceGroup: s.ResourceGroup, ClusterMode: domain.ClusterMode(s.ClusterMode),
		ClusterSize: s.ClusterSize, Priority: s.Priority, Requested: req, Status: st, StatusChangedAt: s.StatusChangedAt,
		CreatedAt: s.CreatedAt, DesignatedStrict: s.DesignatedStrict, Array: domain.ArrayID(s.Array)}
	if s.ArrayIndex != nil {
		sess.ArrayIndex = *s.ArrayIndex
	}
	if s.StartsAt != nil {
		sess.StartsAt = *s.StartsAt
	}
	if s.TimeLimit != "" {
		sess.TimeLimit, err = time.ParseDuration(s.TimeLimit)
		if err != nil {
			return simulate.LiveSession{}, fmt.Errorf("session %s: time_limit: %w", s.ID, err)
		}
	}
	for _, d := range s.DependsOn {
		sess.DependsOn = append(sess.DependsOn, domain.SessionID(d))
	}
	for _, a := range s.DesignatedAgents {
		sess.DesignatedAgents = append(sess.DesignatedAgents, domain.AgentID(a))
	}
	ls := simulate.LiveSession{Session: sess}
	for _, k := range s.Kernels {
		ks, err := domain.ParseKernelStatus(k.Status)
		if err != nil {
			return ls, fmt.Errorf("kernel %s: %w", k.ID, err)
		}
		if st != domain.SessionPending && !ks.HoldsResources() {
			continue
		}
		ls.Kernels = append(ls.Kernels, domain.Kernel{ID: domain.KernelID(k.ID), SessionID: sess.ID, Agent: domain.AgentID(k.Agent),
			Status: ks, ClusterRole: k.ClusterRole, ClusterIdx: k.ClusterIdx, Architecture: s.Architecture, Requested: req.Clone()})
	}
	ls.Run, ls.End = simulate.ExpectedRun(sess), simulate.ExpectedEnd(sess, now)
	return ls, nil
}
