package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/store"
)

// matchingStore records the promotion checks and can fail one.
type matchingStore struct {
	store.Store
	mu     sync.Mutex
	checks []matchCheck
	fail   bool
}

type matchCheck struct {
	statuses []domain.SessionStatus
	among    []domain.SessionID // nil: every session in the statuses
}

func (s *matchingStore) SessionsMatching(ctx context.Context, statuses []domain.SessionStatus,
	check []domain.KernelStatus, match domain.Match, among ...domain.SessionID) ([]domain.SessionID, error) {
	s.mu.Lock()
	s.checks = append(s.checks, matchCheck{statuses, among})
	fail := s.fail
	s.fail = false
	s.mu.Unlock()
	if fail {
		return nil, errors.New("injected failure")
	}
	return s.Store.SessionsMatching(ctx, statuses, check, match, among...)
}

func (s *matchingStore) take() []matchCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.checks
	s.checks = nil
	return out
}

// TestPromotionsCheckOnlyChangedSessions: once every promotion handler has
// checked every session, a cycle in which nothing changed checks none, and
// a kernel that ends — written straight to the store, as another manager
// would — has its session checked by id and promoted. A failed check, or
// more changes than one page of the feed, brings back a check of every
// session, and nothing is missed either way.
func TestPromotionsCheckOnlyChangedSessions(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			h := newHarness(t, engine, 2, nil)
			ms := &matchingStore{Store: h.st}
			h.c = coordinator.New(coordinator.Deps{Store: ms, Agents: h.agents, Scheduler: scheduler.New(scheduler.NewRegistry()),
				Clock: h.clock}, coordinator.Config{CallTimeout: time.Second})
			endKernel := func(id domain.SessionID) {
				t.Helper()
				k := h.session(id).Kernels[0]
				if _, err := h.st.UpdateKernel(h.ctx, store.KernelUpdate{Kernel: k.ID, From: []domain.KernelStatus{domain.KernelRunning},
					To: domain.KernelTerminated, Now: h.clock.Now(), ExitCode: new(int)}); err != nil {
					t.Fatal(err)
				}
			}

			a := h.submit("sleep", "1", 1, domain.SingleNode)
			b := h.submit("sleep", "1", 1, domain.SingleNode)
			h.until(a, domain.SessionRunning)
			h.until(b, domain.SessionRunning)
			h.steps(2)
			ms.take()
			h.steps(3)
			if got := ms.take(); len(got) != 0 {
				t.Fatalf("cycles with nothing changed checked %+v, want nothing", got)
			}

			endKernel(a)
			h.step()
			checks := ms.take()
			if len(checks) == 0 || checks[0].among == nil || fmt.Sprint(checks[0].among) != fmt.Sprint([]domain.SessionID{a}) {
				t.Fatalf("after %s's kernel ended the first check was %+v, want one of %s alone", a, checks, a)
			}
			h.until(a, domain.SessionTerminated)
			h.wantStatus(b, domain.SessionRunning)

			// The check that would find b's ended kernel fails: the next
			// one checks everything, and b is not missed.
			endKernel(b)
			ms.take()
			ms.mu.Lock()
			ms.fail = true
			ms.mu.Unlock()
			if err := h.c.Cycle(h.ctx); err == nil {
				t.Fatal("the cycle with a failed check reported no error")
			}
			h.wantStatus(b, domain.SessionRunning)
			h.step()
			var full bool
			for _, c := range ms.take() {
				full = full || c.among == nil
			}
			if !full {
				t.Error("after a failed check, no check of every session")
			}
			h.until(b, domain.SessionTerminated)

			// More changes than a page of the feed between two cycles.
			c := h.submit("sleep", "1", 1, domain.SingleNode)
			h.until(c, domain.SessionRunning)
			h.steps(2)
			for range 1001 {
				h.submit("sleep", "1000", 1, domain.SingleNode) // never fits: it only adds to the feed
			}
			endKernel(c)
			ms.take()
			h.until(c, domain.SessionTerminated)
			full = false
			for _, ch := range ms.take() {
				full = full || ch.among == nil
			}
			if !full {
				t.Error("after a full page of changes, no check of every session")
			}
		})
	}
}

// listingStore records the statuses each session listing asked for.
type listingStore struct {
	store.Store
	mu    sync.Mutex
	lists [][]domain.SessionStatus
}

func (s *listingStore) ListSessions(ctx context.Context, f store.SessionFilter) ([]domain.Session, error) {
	s.mu.Lock()
	s.lists = append(s.lists, f.Statuses)
	s.mu.Unlock()
	return s.Store.ListSessions(ctx, f)
}

// take returns the listings since the last take that asked for any of
// statuses.
func (s *listingStore) take(statuses ...domain.SessionStatus) [][]domain.SessionStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]domain.SessionStatus
	for _, l := range s.lists {
		for _, st := range statuses {
			if slices.Contains(l, st) {
				out = append(out, l)
				break
			}
		}
	}
	s.lists = nil
	return out
}

// TestHandlersListOnlyAfterAMoveIntoTheirStatuses: a lifecycle handler
// that found no session in its statuses does not list them again while
// nothing moves into them; a session another manager moves there (a
// change of the feed like any other) is listed and handled at the next
// cycle, and a new submission still goes all the way to RUNNING.
func TestHandlersListOnlyAfterAMoveIntoTheirStatuses(t *testing.T) {
	targets := []domain.SessionStatus{domain.SessionScheduled, domain.SessionPrepared, domain.SessionTerminating}
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			h := newHarness(t, engine, 2, nil)
			ls := &listingStore{Store: h.st}
			h.c = coordinator.New(coordinator.Deps{Store: ls, Agents: h.agents, Scheduler: scheduler.New(scheduler.NewRegistry()),
				Clock: h.clock}, coordinator.Config{CallTimeout: time.Second})
			a := h.submit("sleep", "1", 1, domain.SingleNode)
			h.until(a, domain.SessionRunning)
			h.steps(2)
			ls.take()
			h.steps(3)
			if got := ls.take(targets...); len(got) != 0 {
				t.Fatalf("cycles with nothing moved listed %v, want no listing", got)
			}

			other := coordinator.New(coordinator.Deps{Store: h.st, Agents: h.agents, Scheduler: scheduler.New(scheduler.NewRegistry()),
				Clock: h.clock}, coordinator.Config{CallTimeout: time.Second})
			if _, err := other.Terminate(h.ctx, a, "ended by another manager", false); err != nil {
				t.Fatal(err)
			}
			h.step()
			if got := ls.take(domain.SessionTerminating); len(got) == 0 {
				t.Fatal("after a session moved to TERMINATING, no listing of TERMINATING")
			}
			h.until(a, domain.SessionTerminated)

			b := h.submit("sleep", "1", 1, domain.SingleNode)
			h.until(b, domain.SessionRunning)
		})
	}
}
