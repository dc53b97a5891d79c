package codec

import (
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// HoldingColumns are what ScanHolding reads, over kernels k joined with
// their sessions s.
const HoldingColumns = `k.agent_id, k.session_id, k.requested, s.status, s.status_changed_at, s.time_limit_ns,
	s.priority, s.preemptible, s.preempted_by`

// HoldingRow is one row of HoldingColumns, before an expected end is
// worked out from it: the snapshot cache keeps rows between rounds and
// works the end out afresh each time.
type HoldingRow struct {
	Agent   domain.AgentID
	Session domain.SessionID
	Slots   domain.Vec
	// Named reports whether the request names any slot: the uncached
	// usage sums over the request's pairs, so one that names none adds
	// no row for its owner.
	Named       bool
	Status      domain.SessionStatus
	Changed     time.Time
	Limit       time.Duration
	Priority    int
	Preemptible bool
	PreemptedBy domain.SessionID
}

// ScanHolding reads HoldingColumns into a holding whose expected end is
// worked out as of now (HoldingRow.At).
func ScanHolding(reg *domain.Registry, sc Scanner, now time.Time) (framework.Holding, error) {
	r, err := ScanHoldingRow(reg, sc)
	return r.At(now), err
}

// ScanHoldingRow reads one row of HoldingColumns.
func ScanHoldingRow(reg *domain.Registry, sc Scanner) (HoldingRow, error) {
	var (
		h                           HoldingRow
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
	// A JSON object names a key exactly when it holds a colon.
	h.Named = strings.Contains(req, ":")
	h.Changed = e.time("status_changed_at", changed)
	h.Status = e.sessionStatus("status", status)
	h.Limit, h.Preemptible, h.PreemptedBy = time.Duration(limit), preemptible == 1, domain.SessionID(preemptedBy)
	return h, e.err
}

// At is the holding as of now: a RUNNING session's limit counts from when
// it started running, which its status_changed_at records until it leaves
// RUNNING; one not yet running gets its whole limit from now, the
// earliest it could end; one TERMINATING frees its slots about now.
func (r HoldingRow) At(now time.Time) framework.Holding {
	h := framework.Holding{Agent: r.Agent, Session: r.Session, Slots: r.Slots, Status: r.Status,
		Priority: r.Priority, Preemptible: r.Preemptible, PreemptedBy: r.PreemptedBy}
	if r.Status == domain.SessionRunning {
		h.Started = r.Changed
	}
	switch {
	case r.Status == domain.SessionTerminating:
		h.Ends = now
	case r.Limit <= 0:
	case r.Status == domain.SessionRunning:
		h.Ends = r.Changed.Add(r.Limit)
	default:
		h.Ends = now.Add(r.Limit)
	}
	return h
}
