package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api"
	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// feedPolls reads sokovan_api_feed_polls_total from /metrics.
func feedPolls(t *testing.T, m *apitest.Manager) float64 {
	t.Helper()
	resp, err := http.Get(m.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "sokovan_api_feed_polls_total "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}

// TestEventStreamsShareOneFeedReader: twenty open streams cost the store
// one poll per interval, not twenty, and each still gets its changes.
func TestEventStreamsShareOneFeedReader(t *testing.T) {
	t.Parallel()
	const poll = 50 * time.Millisecond
	m := apitest.New(t, apitest.Options{Manual: true, API: api.Config{EventPoll: poll, MaxStreamsPerUser: 32}})
	alice := m.User("alice", "user", "p1")
	var streams []*stream
	for range 20 {
		streams = append(streams, openStream(t, m, alice, "", ""))
	}
	before := feedPolls(t, m)
	start := time.Now()
	s := create(t, m, alice, map[string]any{"image": "sleep"})
	for i, st := range streams {
		c := decodeChange(t, st.next(10*time.Second))
		if c.SessionID != s.ID || c.To != "PENDING" {
			t.Errorf("stream %d: first change %+v, want %s created PENDING", i, c, s.ID)
		}
	}
	time.Sleep(time.Second)
	polls, elapsed := feedPolls(t, m)-before, time.Since(start)
	// One reader polls about elapsed/poll times; twenty readers would poll
	// twenty times that. Allow twice the one reader's share for timing.
	if limit := 2 * float64(elapsed/poll+1); polls > limit || polls < 1 {
		t.Errorf("%v feed polls in %v with 20 streams at a %v interval, want at least 1 and at most %v", polls, elapsed, poll, limit)
	}
}

// TestEventStreamsPerUserAreCapped: past the cap a user's next stream is
// refused with 429 and the error shape, and closing one makes room.
func TestEventStreamsPerUserAreCapped(t *testing.T) {
	t.Parallel()
	const limit = 4
	m := apitest.New(t, apitest.Options{Manual: true, API: api.Config{MaxStreamsPerUser: limit}})
	alice := m.User("alice", "user", "p1")
	bob := m.User("bob", "user", "p1")
	cancels := make([]context.CancelFunc, 0, limit)
	for range limit {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		req, _ := http.NewRequestWithContext(ctx, "GET", m.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream within the cap: %v %v", resp, err)
		}
		t.Cleanup(func() { cancel(); resp.Body.Close() })
	}
	code, raw := m.Raw(alice, "GET", "/v1/events", nil)
	var e v1.ErrorResponse
	if code != http.StatusTooManyRequests || json.Unmarshal(raw, &e) != nil || e.Error.Code != "resource_exhausted" ||
		!strings.Contains(e.Error.Message, fmt.Sprint(limit)) {
		t.Fatalf("stream past the cap: %d %s, want 429 resource_exhausted naming the cap", code, raw)
	}
	openStream(t, m, bob, "", "") // another user is not counted against alice
	cancels[0]()
	deadline := time.Now().Add(5 * time.Second)
	for {
		req, _ := http.NewRequest("GET", m.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("still %d after closing a stream", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
