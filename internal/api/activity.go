package api

import (
	"context"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// activityEvery is the granularity of a session's recorded activity. An
// idle timeout is minutes long, so being up to this much late costs
// nothing, while writing on every proxied request would put a store
// write on the path of every click in a notebook.
const activityEvery = 30 * time.Second

// activity remembers, per session, when this manager last wrote its
// activity, so it writes at most once per activityEvery. It is only a
// rate limit: the store keeps the time, so several managers (or a
// restart) cost at most one more write each.
type activity struct {
	mu   sync.Mutex
	last map[domain.SessionID]time.Time
}

// touchWhile touches the session now and every activityEvery until the
// returned stop is called, and once more then (the client may be gone by
// then, so that last write does not use its context).
func (s *Server) touchWhile(ctx context.Context, sess domain.Session) (stop func()) {
	s.touch(ctx, sess)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(activityEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				s.touch(ctx, sess)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		s.touch(context.WithoutCancel(ctx), sess)
	}
}

// touch records that the owner used a running session (its proxied ports,
// its logs), for the interactive hook's idle timeout. A failed write is
// logged, not returned: it must not fail the user's request, and the next
// touch tries again.
func (s *Server) touch(ctx context.Context, sess domain.Session) {
	if sess.Status != domain.SessionRunning {
		return
	}
	now := s.clock.Now()
	s.act.mu.Lock()
	if t, ok := s.act.last[sess.ID]; ok && now.Sub(t) < activityEvery && !now.Before(t) {
		s.act.mu.Unlock()
		return
	}
	s.act.last[sess.ID] = now
	if len(s.act.last) > 4096 {
		// Entries older than the granularity limit nothing; dropping
		// them keeps the map the size of the sessions in use.
		for id, t := range s.act.last {
			if now.Sub(t) >= activityEvery {
				delete(s.act.last, id)
			}
		}
	}
	s.act.mu.Unlock()
	if err := s.store.TouchSession(ctx, sess.ID, now); err != nil {
		s.log.WarnContext(ctx, "record session activity", "session", sess.ID, "err", err)
	}
}
