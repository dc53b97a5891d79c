package codec

import (
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// DueColumns are what ScanDue reads, over sessions s joined with their
// group g.
const DueColumns = `s.id, s.type, s.resource_group, s.status_changed_at, s.time_limit_ns,
		s.last_activity, g.idle_timeout_ns`

// ScanDue reads DueColumns.
func ScanDue(sc Scanner) (store.DueSession, error) {
	var (
		d               store.DueSession
		id, typ         string
		started, last   rawTime
		limit, idleness int64
	)
	if err := sc.Scan(&id, &typ, &d.ResourceGroup, &started, &limit, &last, &idleness); err != nil {
		return d, err
	}
	d.ID = domain.SessionID(id)
	e := rowErr{table: "sessions", id: id}
	d.Type = parsed(&e, "type", typ, domain.ParseSessionType)
	d.Started = e.time("status_changed_at", started)
	d.LastActivity = e.time("last_activity", last)
	d.TimeLimit, d.IdleTimeout = time.Duration(limit), time.Duration(idleness)
	return d, e.err
}
