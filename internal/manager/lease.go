package manager

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// heldLease is either way a manager leads: the etcd election (with shared
// settings in etcd) or the PostgreSQL advisory lock (managers sharing a
// schema). Both are closed when the manager stops.
type heldLease interface {
	Held(ctx context.Context) bool
	Close()
}

// loggedLease is the coordinator's lease, whichever it is, telling the
// log when this manager takes it or loses it: who leads is the first
// question when handlers seem not to run.
type loggedLease struct {
	heldLease
	kind string
	log  *slog.Logger
	held atomic.Bool
}

func (l *loggedLease) Held(ctx context.Context) bool {
	now := l.heldLease.Held(ctx)
	if was := l.held.Swap(now); was != now {
		if now {
			l.log.Info("took the coordinator lease", "lease", l.kind)
		} else {
			l.log.Warn("lost the coordinator lease", "lease", l.kind)
		}
	}
	return now
}
