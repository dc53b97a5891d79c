package api_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api"
	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func TestEvents(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, API: api.Config{EventHeartbeat: 50 * time.Millisecond}})
		alice := m.User("alice", "user", "p1")
		bob := m.User("bob", "user", "p1")
		admin := openStream(t, m, m.AdminToken, "", "")
		bobs := openStream(t, m, bob, "", "")

		s := create(t, m, alice, map[string]any{"image": "exit:0", "type": "batch"})
		// Snapshot first, then the session's changes from where it was.
		follow := openStream(t, m, alice, "?session="+s.ID, "")
		snap := follow.next(10 * time.Second)
		var sj v1.Session
		if err := json.Unmarshal([]byte(snap.Data), &sj); err != nil || snap.Event != "snapshot" || sj.ID != s.ID || snap.ID != "" {
			t.Fatalf("first event %+v, want the session's snapshot", snap)
		}

		// The admin sees every change of the session, kernel ones too, in
		// order, with growing ids, ending TERMINATED.
		var ids []int64
		var sessionPath, kernelPath []string
		for len(sessionPath) == 0 || sessionPath[len(sessionPath)-1] != "TERMINATED" {
			ev := admin.next(20 * time.Second)
			id, err := strconv.ParseInt(ev.ID, 10, 64)
			if err != nil || (len(ids) > 0 && id <= ids[len(ids)-1]) {
				t.Fatalf("event id %q after %v", ev.ID, ids)
			}
			ids = append(ids, id)
			c := decodeChange(t, ev)
			if c.Seq != id || c.Kind != ev.Event {
				t.Fatalf("event %+v carries %+v", ev, c)
			}
			switch ev.Event {
			case "session":
				sessionPath = append(sessionPath, c.To)
			case "kernel":
				if c.KernelID != s.ID+"-k0" || c.Agent == "" {
					t.Fatalf("kernel change %+v", c)
				}
				kernelPath = append(kernelPath, c.To)
				if c.To == "TERMINATED" && (c.ExitCode == nil || *c.ExitCode != 0) {
					t.Errorf("kernel ended without its exit code: %+v", c)
				}
			}
		}
		if sessionPath[0] != "PENDING" || !contains(sessionPath, "RUNNING") || !contains(kernelPath, "RUNNING") ||
			kernelPath[len(kernelPath)-1] != "TERMINATED" {
			t.Errorf("session path %v, kernel path %v", sessionPath, kernelPath)
		}
		// The follower, filtered to the session, gets the changes after its
		// snapshot, up to the end.
		for {
			c := decodeChange(t, follow.next(20*time.Second))
			if c.SessionID != s.ID {
				t.Fatalf("filtered stream carried %+v", c)
			}
			if c.Kind == "session" && c.To == "TERMINATED" {
				break
			}
		}

		// Resuming after an event replays everything after it.
		resumed := openStream(t, m, m.AdminToken, "", strconv.FormatInt(ids[0], 10))
		for _, want := range ids[1:] {
			if got := resumed.next(10 * time.Second); got.ID != strconv.FormatInt(want, 10) {
				t.Fatalf("resumed stream: id %s, want %d", got.ID, want)
			}
		}
		viaQuery := openStream(t, m, m.AdminToken, "?after="+strconv.FormatInt(ids[len(ids)-2], 10), "")
		if got := viaQuery.next(10 * time.Second); got.ID != strconv.FormatInt(ids[len(ids)-1], 10) {
			t.Errorf("?after: id %s, want %d", got.ID, ids[len(ids)-1])
		}

		// Bob sees his own session's changes and none of alice's.
		mine := create(t, m, bob, map[string]any{"image": "sleep"})
		if c := decodeChange(t, bobs.next(10*time.Second)); c.SessionID != mine.ID || c.Owner != "bob" {
			t.Errorf("bob's stream opened with %+v", c)
		}

		// Idle streams carry heartbeat comments.
		select {
		case ev := <-follow.events:
			if !ev.Comment {
				t.Errorf("idle stream carried %+v", ev)
			}
		case <-time.After(10 * time.Second):
			t.Error("no heartbeat on an idle stream")
		}

		var e v1.ErrorResponse
		if code := m.Do(alice, "GET", "/v1/events?after=x", nil, &e); code != 400 || e.Error.Field != "after" {
			t.Errorf("bad after: %d %+v", code, e)
		}
		if code := m.Do(alice, "GET", "/v1/events?session=nope", nil, &e); code != 404 {
			t.Errorf("following a missing session: %d %+v", code, e)
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
