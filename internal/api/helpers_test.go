package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/store"
)

// engines runs fn once per store engine, in parallel.
func engines(t *testing.T, fn func(t *testing.T, engine string)) {
	t.Helper()
	for _, e := range apitest.Engines {
		t.Run(e, func(t *testing.T) {
			t.Parallel()
			fn(t, e)
		})
	}
}

// create submits a session and fails the test unless it is accepted.
func create(t *testing.T, m *apitest.Manager, token string, body map[string]any) v1.Session {
	t.Helper()
	var s v1.Session
	if code, raw := m.Raw(token, "POST", "/v1/sessions", body); code != http.StatusCreated {
		t.Fatalf("create %v: status %d: %s", body, code, raw)
	} else if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func get(t *testing.T, m *apitest.Manager, token, id string) v1.Session {
	t.Helper()
	var s v1.Session
	if code := m.Do(token, "GET", "/v1/sessions/"+id, nil, &s); code != http.StatusOK {
		t.Fatalf("get %s: status %d", id, code)
	}
	return s
}

// waitStatus polls the session until it is in want.
func waitStatus(t *testing.T, m *apitest.Manager, token, id, want string) v1.Session {
	t.Helper()
	var s v1.Session
	apitest.Eventually(t, 20*time.Second, "session "+id+" to be "+want, func() bool {
		s = get(t, m, token, id)
		return s.Status == want
	})
	return s
}

// snapshot is everything the store holds that a request could write:
// compared before and after a refused request, it shows nothing was.
type snapshot struct {
	sessions, kernels int
	lastChange        int64
}

func stored(t *testing.T, m *apitest.Manager) snapshot {
	t.Helper()
	ctx := context.Background()
	ss, err := m.Store.ListSessions(ctx, store.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := m.Store.ListKernels(ctx, store.KernelFilter{})
	if err != nil {
		t.Fatal(err)
	}
	last, err := m.Store.LastChange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return snapshot{sessions: len(ss), kernels: len(ks), lastChange: last}
}

// event is one server-sent event.
type event struct {
	ID, Event, Data string
	Comment         bool
}

// stream reads an event stream in the background.
type stream struct {
	t      *testing.T
	resp   *http.Response
	events chan event
}

func openStream(t *testing.T, m *apitest.Manager, token, query, lastID string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", m.URL+"/v1/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events%s: status %d", query, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events content type %q", ct)
	}
	s := &stream{t: t, resp: resp, events: make(chan event, 256)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var ev event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev != (event{}) {
					s.events <- ev
				}
				ev = event{}
			case strings.HasPrefix(line, ":"):
				ev.Comment = true
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.Event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return s
}

// next returns the next event that is not a comment.
func (s *stream) next(within time.Duration) event {
	s.t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.t.Fatal("event stream ended")
			}
			if !ev.Comment || ev.Event != "" {
				return ev
			}
		case <-timer.C:
			s.t.Fatalf("no event within %v", within)
		}
	}
}

func decodeChange(t *testing.T, ev event) v1.Change {
	t.Helper()
	var c v1.Change
	if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
		t.Fatalf("event data %q: %v", ev.Data, err)
	}
	return c
}

type ioReadCloser = io.ReadCloser

type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }
