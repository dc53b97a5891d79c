package sqlstore

import (
	"context"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

const (
	// A repeated drain keeps when the drain started and takes the new
	// deadline, so an admin can shorten or lift it.
	upsertDrain = `INSERT INTO agent_drains (agent_id, started_ns, deadline_ns) VALUES ($1, $2, $3)
ON CONFLICT (agent_id) DO UPDATE SET deadline_ns = excluded.deadline_ns`
	deleteDrain  = `DELETE FROM agent_drains WHERE agent_id = $1`
	selectDrains = `SELECT agent_id, started_ns, deadline_ns FROM agent_drains ORDER BY agent_id`
)

func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// DrainAgent implements store.Store.
func (s *Store) DrainAgent(ctx context.Context, id domain.AgentID, started, deadline time.Time) error {
	return s.write(ctx, "drain agent "+string(id), func(tx txn) error {
		if err := tx.execOne(ctx, setAgentSchedulable, false, string(id)); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, upsertDrain, string(id), unixNanos(started), unixNanos(deadline)); err != nil {
			return err
		}
		_, err := tx.exec(ctx, bumpGroupOfAgent, string(id))
		return err
	})
}

// ListAgentDrains implements store.Store.
func (s *Store) ListAgentDrains(ctx context.Context) ([]domain.AgentDrain, error) {
	return readAll(ctx, s, "list agent drains", selectDrains, nil, func(sc codec.Scanner) (domain.AgentDrain, error) {
		var id string
		var started, deadline int64
		err := sc.Scan(&id, &started, &deadline)
		return domain.AgentDrain{Agent: domain.AgentID(id), Started: fromNanos(started), Deadline: fromNanos(deadline)}, err
	})
}
