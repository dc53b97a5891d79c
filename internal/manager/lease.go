package manager

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/sokovan-go/sokovan/internal/store/postgres"
)

// loggedLease is the store's coordinator lease, telling the log when this
// manager takes it or loses it: who leads is the first question when
// handlers seem not to run.
type loggedLease struct {
	*postgres.Lease
	log  *slog.Logger
	held atomic.Bool
}

func (l *loggedLease) Held(ctx context.Context) bool {
	now := l.Lease.Held(ctx)
	if was := l.held.Swap(now); was != now {
		if now {
			l.log.Info("took the coordinator lease")
		} else {
			l.log.Warn("lost the coordinator lease")
		}
	}
	return now
}
