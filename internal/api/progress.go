package api

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// progress explains a placed session that has not reached RUNNING, or is
// terminating: the blockers of `why` only cover the queue, and a user
// whose session sits in PREPARING wants to know on what, and until when.
func (s *Server) progress(ctx context.Context, sk store.SessionWithKernels) (*v1.Progress, error) {
	st := sk.Session.Status
	if st == domain.SessionPending || st == domain.SessionRunning || st.Terminal() {
		return nil, nil
	}
	p := &v1.Progress{Since: sk.Session.StatusChangedAt.UTC(), WaitingFor: []string{}}
	bound, err := s.sessions.Bound(ctx, sk.Session.ResourceGroup, st)
	if err != nil {
		return nil, err
	}
	if bound > 0 {
		end := p.Since.Add(bound)
		p.Bound, p.Deadline = bound.String(), &end
	}
	var ids []domain.AgentID
	for _, k := range sk.Kernels {
		if k.Agent != "" && !slices.Contains(ids, k.Agent) {
			ids = append(ids, k.Agent)
		}
	}
	agents := map[domain.AgentID]domain.Agent{}
	if len(ids) > 0 {
		list, err := s.store.ListAgents(ctx, store.AgentFilter{IDs: ids})
		if err != nil {
			return nil, err
		}
		for _, a := range list {
			agents[a.ID] = a
		}
	}
	ks := slices.Clone(sk.Kernels)
	slices.SortFunc(ks, func(a, b domain.Kernel) int { return a.ClusterIdx - b.ClusterIdx })
	for _, k := range ks {
		line := kernelWait(st, k)
		if line == "" {
			continue
		}
		if a, ok := agents[k.Agent]; ok && a.Status != domain.AgentAlive {
			line += fmt.Sprintf(" (agent %s is %s, last heard from %s)", a.ID, a.Status,
				a.LastHeartbeat.UTC().Format(time.RFC3339))
		}
		p.WaitingFor = append(p.WaitingFor, line)
	}
	hist, err := s.store.History(ctx, sk.Session.ID)
	if err != nil {
		return nil, err
	}
	// The last entry tells whether the latest attempt in this status
	// failed; a success or a move since makes an older failure moot.
	if n := len(hist); n > 0 {
		switch e := hist[n-1]; {
		case e.From != st:
		case e.Result == domain.ResultNeedRetry:
			p.LastFailure = fmt.Sprintf("%s at %s: %s", e.Cause, e.At.UTC().Format(time.RFC3339), e.Message)
		case e.Result == domain.ResultSkipped && e.Message != "":
			// Not attempted, for a reason the handler gave: an agent that
			// does not answer holds its sessions until it does.
			p.WaitingFor = append(p.WaitingFor, e.Message)
		}
	}
	return p, nil
}

// kernelWait says what one kernel of a session in status st waits for, or
// "" when it holds nothing back.
func kernelWait(st domain.SessionStatus, k domain.Kernel) string {
	name := fmt.Sprintf("kernel %s (%s)", k.ID, k.Status)
	if k.Status.Terminal() {
		return ""
	}
	if st == domain.SessionTerminating {
		if k.Agent == "" {
			return name + ": never placed, ends with the session"
		}
		return fmt.Sprintf("%s: agent %s to stop it", name, k.Agent)
	}
	var what string
	switch k.Status {
	case domain.KernelPending:
		what = "a place: the session is being placed again"
	case domain.KernelScheduled:
		what = fmt.Sprintf("the manager to ask agent %s for image %s", k.Agent, k.Image)
	case domain.KernelPreparing, domain.KernelPulling:
		what = fmt.Sprintf("image %s to be pulled on agent %s", k.Image, k.Agent)
	case domain.KernelPrepared:
		if st == domain.SessionPreparing {
			what = "the session's other kernels to be ready"
		} else {
			what = fmt.Sprintf("the manager to create it on agent %s", k.Agent)
		}
	case domain.KernelCreating:
		what = fmt.Sprintf("agent %s to start it", k.Agent)
	case domain.KernelRunning:
		what = "the session's other kernels to start"
	default:
		what = fmt.Sprintf("agent %s", k.Agent)
	}
	line := name + ": waiting for " + what
	if k.StatusReason != "" {
		line += "; " + k.StatusReason
	}
	return line
}
