package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// preemptMetrics count what priority preemption cost: how many sessions
// were evicted and how much run time they threw away.
type preemptMetrics struct {
	count    *prometheus.CounterVec
	workLost *prometheus.CounterVec
}

// preempted records the preemptions the store applied: metrics, and
// history on the victim ("preempted by"), the preemptor ("preempting")
// and a victim's new attempt ("requeued"). The victims are TERMINATING
// now: the mark wakes TerminateSessions to destroy their kernels, whose
// release lets the preemptor be placed.
func (c *Coordinator) preempted(ctx context.Context, group string, ps []store.Preempted, now time.Time) error {
	c.metrics.preempt.count.WithLabelValues(group).Add(float64(len(ps)))
	if len(ps) == 0 {
		return nil
	}
	var hist []domain.HistoryEntry
	for _, p := range ps {
		c.metrics.preempt.workLost.WithLabelValues(group).Add(p.WorkLost.Seconds())
		msg := fmt.Sprintf("%s after %s of run time", domain.PreemptedReason(p.Preemptor), p.WorkLost.Round(time.Second))
		if p.Requeued != "" {
			msg += "; requeued as " + string(p.Requeued)
		}
		hist = append(hist,
			domain.HistoryEntry{Subject: p.Victim, At: now, Cause: domain.HandlerScheduleNewSessions,
				Result: domain.ResultSuccess, From: domain.SessionRunning, To: domain.SessionTerminating, Message: msg, Attempt: 1},
			domain.HistoryEntry{Subject: p.Preemptor, At: now, Cause: domain.HandlerScheduleNewSessions,
				Result: domain.ResultSkipped, From: domain.SessionPending, To: domain.SessionPending,
				Message: "preempting " + string(p.Victim) + "; starts when its slots are released", Attempt: 1})
		if p.Requeued != "" {
			hist = append(hist, domain.HistoryEntry{Subject: p.Requeued, At: now, Cause: domain.HandlerScheduleNewSessions,
				Result: domain.ResultSuccess, From: domain.SessionPending, To: domain.SessionPending,
				Message: "requeued: new attempt of " + string(p.Victim) + ", " + domain.PreemptedReason(p.Preemptor), Attempt: 1})
		}
	}
	c.Mark()
	if err := c.store.AppendHistory(ctx, hist); err != nil {
		return fmt.Errorf("preemptions of %s: history: %w", group, err)
	}
	return nil
}

// preemptDue is when a round that changed nothing could decide otherwise
// for preemption alone, with no event to wake it: a running session comes
// of age (reaches the minimum run time) or a preemption leaves the window
// and frees budget. Zero when the group does not preempt or nobody waits.
func preemptDue(snap *framework.Snapshot, plan framework.Plan, now time.Time) time.Time {
	p := snap.Group.Preemption
	if !p.Enabled || len(plan.Waiting) == 0 {
		return time.Time{}
	}
	var due time.Time
	for _, h := range snap.Holdings {
		if h.Status == domain.SessionRunning && h.Preemptible && !h.Started.IsZero() {
			if at := h.Started.Add(p.MinRuntime); at.After(now) {
				due = earliest(due, at)
			}
		}
	}
	for _, r := range snap.Preemptions {
		if at := r.At.Add(p.Window); at.After(now) {
			due = earliest(due, at)
		}
	}
	return due
}

// earliest is the earlier of two times, a zero one counting as none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}
