package api_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestSessionTimeLimit: a group's default and maximum time limits apply
// at submit as SLURM's partition limits do; bad limits are refused with
// 400 naming the field, and nothing is stored.
func TestSessionTimeLimit(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Manual: true})
		alice := m.User("alice", "user", "p1")
		for _, tc := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"bad duration", map[string]any{"max_time_limit": "soon"}, "max_time_limit"},
			{"negative", map[string]any{"idle_timeout": "-1m"}, "idle_timeout"},
			{"default above max", map[string]any{"default_time_limit": "5h", "max_time_limit": "4h"}, "default_time_limit"},
		} {
			code, raw := m.Raw(m.AdminToken, "PUT", "/v1/resource-groups/default", tc.body)
			if e := errorOf(t, raw); code != http.StatusBadRequest || e.Field != tc.field {
				t.Errorf("group %s: %d %+v, want 400 naming %s", tc.name, code, e, tc.field)
			}
		}
		var g v1.Group
		if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{
			"default_time_limit": "1h", "max_time_limit": "4h", "idle_timeout": "15m"}, &g); code != http.StatusOK {
			t.Fatalf("PUT group: %d", code)
		}
		if g.DefaultTimeLimit != "3600s" || g.MaxTimeLimit != "14400s" || g.IdleTimeout != "900s" {
			t.Errorf("group limits %q %q %q, want 3600s 14400s 900s", g.DefaultTimeLimit, g.MaxTimeLimit, g.IdleTimeout)
		}

		for _, tc := range []struct {
			name, typ, limit string
			want             string // the session's time_limit; "" with field set: refused
			field            string
		}{
			{"group default", "batch", "", "3600s", ""},
			{"own limit", "batch", "2h", "7200s", ""},
			{"at the max", "interactive", "4h", "14400s", ""},
			{"above the max", "batch", "4h1s", "", "time_limit"},
			{"zero", "batch", "0s", "", "time_limit"},
			{"negative", "batch", "-1h", "", "time_limit"},
			{"not a duration", "batch", "two hours", "", "time_limit"},
			{"inference takes none", "inference", "", "", ""},
			{"inference refuses one", "inference", "1h", "", "time_limit"},
		} {
			body := map[string]any{"image": "sleep", "type": tc.typ, "resources": map[string]string{"cpu": "1"}}
			if tc.limit != "" {
				body["time_limit"] = tc.limit
			}
			if tc.field != "" {
				code, raw := m.Raw(alice, "POST", "/v1/sessions", body)
				if e := errorOf(t, raw); code != http.StatusBadRequest || e.Field != tc.field {
					t.Errorf("%s: %d %+v, want 400 naming %s", tc.name, code, e, tc.field)
				}
				continue
			}
			s := create(t, m, alice, body)
			if got := get(t, m, alice, s.ID).TimeLimit; got != tc.want {
				t.Errorf("%s: time_limit %q, want %q", tc.name, got, tc.want)
			}
		}
		var list v1.SessionPage
		m.Do(alice, "GET", "/v1/sessions", nil, &list)
		if len(list.Items) != 4 {
			t.Errorf("%d sessions stored, want the 4 accepted", len(list.Items))
		}
	})
}

// TestProxyRecordsActivity: proxied traffic is recorded as the session's
// last activity, which the interactive hook's idle timeout counts from.
func TestProxyRecordsActivity(t *testing.T) {
	t.Parallel()
	k := &kernelServer{release: make(chan struct{}), auth: make(chan string, 16)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: k, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	m := apitest.New(t, apitest.Options{ServicePorts: []domain.ServicePort{{Name: "http", Protocol: "http", Host: "127.0.0.1", Port: port}}})
	if code := m.Do(m.AdminToken, "PUT", "/v1/resource-groups/default", map[string]any{"idle_timeout": "10m"}, nil); code != http.StatusOK {
		t.Fatalf("PUT group: %d", code)
	}
	alice := m.User("alice", "user", "p1")
	s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}})
	s = waitStatus(t, m, alice, s.ID, "RUNNING")

	lastActivity := func() time.Time {
		t.Helper()
		due, err := m.Store.DueSessions(context.Background(), time.Now().Add(time.Hour),
			[]domain.SessionType{domain.TypeInteractive})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range due {
			if string(d.ID) == s.ID {
				return d.LastActivity
			}
		}
		t.Fatalf("session %s not among the idle ones an hour from now", s.ID)
		return time.Time{}
	}
	if got := lastActivity(); !got.IsZero() {
		t.Fatalf("activity %s before any use", got)
	}
	before := time.Now().Add(-time.Second)
	req, _ := http.NewRequest("GET", m.URL+s.ServicePorts[0].ProxyPath, nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := lastActivity(); got.Before(before) {
		t.Errorf("activity %s after a proxied request at %s", got, before)
	}
}
