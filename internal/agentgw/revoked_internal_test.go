package agentgw

import (
	"context"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/store"
)

// slowRevocations is a store whose list of revoked serials is read only
// when the test lets it: the read is in flight for as long as the test
// wants to look at the cache meanwhile.
type slowRevocations struct {
	store.Identities
	entered chan struct{}
	release chan []string
}

func (s *slowRevocations) RevokedCertificates(context.Context, time.Time) ([]string, error) {
	s.entered <- struct{}{}
	return <-s.release, nil
}

// TestRevokedCacheReadsTheStoreOutsideItsLock: while the store is being
// read, the cache's lock is free, so Forget (an `agent rm` on this
// manager) and verifications are not held up by a slow store; and a read
// begun before a Forget is not kept as the fresh copy.
func TestRevokedCacheReadsTheStoreOutsideItsLock(t *testing.T) {
	st := &slowRevocations{entered: make(chan struct{}), release: make(chan []string)}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	g := New(nil, nil, nil, "", func() time.Time { return now }, nil)
	g.UseIdentity(Identity{Store: st})

	got := make(chan func(string) bool)
	go func() { got <- g.revoked.check(context.Background(), g) }()
	<-st.entered
	if !g.revoked.mu.TryLock() {
		t.Fatal("the cache's lock is held while the store is read")
	}
	g.revoked.mu.Unlock()
	g.Forget() // returns at once: the lock is free
	st.release <- []string{"old"}
	if check := <-got; !check("old") {
		t.Fatal("the read's own caller does not see what it read")
	}

	// The read predates the Forget, so the next check reads again.
	go func() { got <- g.revoked.check(context.Background(), g) }()
	<-st.entered
	st.release <- []string{"old", "new"}
	if check := <-got; !check("new") {
		t.Fatal("a read begun before Forget was kept as the fresh copy")
	}
	// Now fresh: answered from the copy, without the store.
	if check := g.revoked.check(context.Background(), g); !check("new") || check("other") {
		t.Fatal("the fresh copy does not answer")
	}
}
