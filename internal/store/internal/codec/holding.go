package codec

import (
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// HoldingColumns are what ScanHolding reads, over kernels k joined with
// their sessions s.
const HoldingColumns = `k.agent_id, k.session_id, k.requested, s.status, s.status_changed_at, s.time_limit_ns,
	s.priority, s.preemptible, s.preempted_by`

// ScanHolding reads HoldingColumns into a holding whose expected end is
// worked out as of now: a RUNNING session's limit counts from when it
// started running, which its status_changed_at records until it leaves
// RUNNING; one not yet running gets its whole limit from now, the
// earliest it could end; one TERMINATING frees its slots about now.
func ScanHolding(reg *domain.Registry, sc Scanner, now time.Time) (framework.Holding, error) {
	var (
		h                           framework.Holding
		agent, session, req, status string
		changed                     rawTime
		limit, preemptible          int64
		preemptedBy                 string
	)
	if err := sc.Scan(&agent, &session, &req, &status, &changed, &limit, &h.Priority, &preemptible,
		&preemptedBy); err != nil {
		return h, err
	}
	h.Agent, h.Session = domain.AgentID(agent), domain.SessionID(session)
	e := rowErr{table: "kernels", id: session}
	h.Slots = e.slots("requested", reg, req)
	started := e.time("status_changed_at", changed)
	st := e.sessionStatus("status", status)
	h.Status, h.Preemptible, h.PreemptedBy = st, preemptible == 1, domain.SessionID(preemptedBy)
	if st == domain.SessionRunning {
		h.Started = started
	}
	switch {
	case st == domain.SessionTerminating:
		h.Ends = now
	case limit <= 0:
	case st == domain.SessionRunning:
		h.Ends = started.Add(time.Duration(limit))
	default:
		h.Ends = now.Add(time.Duration(limit))
	}
	return h, e.err
}
