package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/api"
	"github.com/sokovan-go/sokovan/internal/api/apitest"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
	"github.com/sokovan-go/sokovan/internal/store"
)

func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, engine string) {
		m := apitest.New(t, apitest.Options{Engine: engine, Logs: func(context.Context, domain.AgentID, domain.KernelID, int64) (ioReadCloser, error) {
			return nopCloser{strings.NewReader("hello\n")}, nil
		}})
		alice := m.User("alice", "user", "p1")
		bob := m.User("bob", "user", "p1")
		s := create(t, m, alice, map[string]any{"image": "sleep", "resources": map[string]string{"cpu": "1"}})
		waitStatus(t, m, alice, s.ID, "RUNNING")
		sid := "/v1/sessions/" + s.ID

		for _, tc := range []struct {
			name, token, method, path string
			body                      any
			want                      int
		}{
			{"no token", "", "GET", "/v1/sessions", nil, 401},
			{"unknown token", "skv_nope", "GET", "/v1/sessions", nil, 401},
			{"agent token on a user route", apitest.AgentToken, "GET", "/v1/sessions", nil, 401},
			{"agent token on an admin route", apitest.AgentToken, "POST", "/v1/users", map[string]string{"name": "x"}, 401},
			{"agent token on agent RPC", apitest.AgentToken, "POST", "/v1/agent/heartbeat", "{}", 200},
			{"user token on agent RPC", alice, "POST", "/v1/agent/heartbeat", "{}", 403},
			{"admin token on agent RPC", m.AdminToken, "POST", "/v1/agent/heartbeat", "{}", 403},
			{"no token on agent RPC", "", "POST", "/v1/agent/heartbeat", "{}", 401},
			{"bad token on agent RPC", "skv_nope", "POST", "/v1/agent/heartbeat", "{}", 401},
			{"user creates a user", alice, "POST", "/v1/users", map[string]string{"name": "eve"}, 403},
			{"user sets a policy", alice, "PUT", "/v1/policies/user/alice", map[string]any{"max_pending_sessions": 100}, 403},
			{"user reads a policy", alice, "GET", "/v1/policies/user/alice", nil, 403},
			{"user changes a group", alice, "PUT", "/v1/resource-groups/default", map[string]string{"state": "STOPPED"}, 403},
			{"user cordons", alice, "POST", "/v1/agents/agent-0/cordon", nil, 403},
			{"user uncordons", alice, "POST", "/v1/agents/agent-0/uncordon", nil, 403},
			{"user drains", alice, "POST", "/v1/agents/agent-0/drain", nil, 403},
			{"user lists agents", alice, "GET", "/v1/agents", nil, 200},
			{"user lists groups", alice, "GET", "/v1/resource-groups", nil, 200},
			{"owner gets", alice, "GET", sid, nil, 200},
			{"owner history", alice, "GET", sid + "/history", nil, 200},
			{"owner why", alice, "GET", sid + "/why", nil, 200},
			{"owner logs", alice, "GET", sid + "/logs", nil, 200},
			{"other user gets", bob, "GET", sid, nil, 404},
			{"other user history", bob, "GET", sid + "/history", nil, 404},
			{"other user why", bob, "GET", sid + "/why", nil, 404},
			{"other user logs", bob, "GET", sid + "/logs", nil, 404},
			{"other user deletes", bob, "DELETE", sid, nil, 404},
			{"other user follows", bob, "GET", "/v1/events?session=" + s.ID, nil, 404},
			{"other user lists someone else's", bob, "GET", "/v1/sessions?owner=alice", nil, 403},
			{"admin gets", m.AdminToken, "GET", sid, nil, 200},
			{"admin history", m.AdminToken, "GET", sid + "/history", nil, 200},
			{"admin why", m.AdminToken, "GET", sid + "/why", nil, 200},
			{"healthz is public", "", "GET", "/healthz", nil, 200},
			{"readyz is public", "", "GET", "/readyz", nil, 200},
			{"metrics are public", "", "GET", "/metrics", nil, 200},
			{"openapi is public", "", "GET", "/v1/openapi.json", nil, 200},
		} {
			code, raw := m.Raw(tc.token, tc.method, tc.path, tc.body)
			if code != tc.want {
				t.Errorf("%s: %s %s → %d, want %d: %s", tc.name, tc.method, tc.path, code, tc.want, raw)
			}
		}

		// A 404 for another user's session reads exactly as one for a
		// session that does not exist.
		_, foreign := m.Raw(bob, "GET", sid, nil)
		_, missing := m.Raw(bob, "GET", "/v1/sessions/"+strings.Repeat("0", len(s.ID)), nil)
		if strings.ReplaceAll(string(foreign), s.ID, "X") != strings.ReplaceAll(string(missing), strings.Repeat("0", len(s.ID)), "X") {
			t.Errorf("another user's session answers %s, a missing one %s", foreign, missing)
		}

		var list struct{ Items []v1.Session }
		m.Do(bob, "GET", "/v1/sessions", nil, &list)
		if len(list.Items) != 0 {
			t.Errorf("bob lists %d sessions, want none of alice's", len(list.Items))
		}
		m.Do(m.AdminToken, "GET", "/v1/sessions?owner=alice", nil, &list)
		if len(list.Items) != 1 || list.Items[0].ID != s.ID {
			t.Errorf("admin lists %+v for alice", list.Items)
		}
		// Bob's refused delete did nothing.
		if got := get(t, m, alice, s.ID); got.Status != "RUNNING" {
			t.Errorf("after bob's delete the session is %s", got.Status)
		}

		req, _ := http.NewRequest("GET", m.URL+"/v1/sessions", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if h := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
			t.Errorf("401 without a Bearer challenge: %q", h)
		}
	})
}

func TestTokens(t *testing.T) {
	t.Parallel()
	tok := api.NewToken()
	if !strings.HasPrefix(tok, api.TokenPrefix) || len(tok) != len(api.TokenPrefix)+43 {
		t.Errorf("token %q: want %s and 43 base64url characters (32 bytes)", tok, api.TokenPrefix)
	}
	if api.NewToken() == tok {
		t.Error("two tokens are equal")
	}
	if len(api.HashToken(tok)) != 32 {
		t.Error("hash is not SHA-256")
	}
}

func TestEnsureAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := apitest.Open(t, "sqlite", domain.DefaultRegistry())
	tok := api.NewToken()
	for i := range 2 { // a restart with the same token changes nothing
		if err := api.EnsureAdmin(ctx, st, tok); err != nil {
			t.Fatalf("ensure admin, run %d: %v", i, err)
		}
	}
	u, err := st.UserByTokenHash(ctx, api.HashToken(tok))
	if err != nil || u.Name != api.AdminName || u.Role != store.RoleAdmin {
		t.Fatalf("admin: %+v, %v", u, err)
	}
	if err := api.EnsureAdmin(ctx, st, api.NewToken()); !errors.Is(err, api.ErrAdminToken) {
		t.Errorf("another token for the existing admin: %v, want ErrAdminToken", err)
	}
	userTok := api.NewToken()
	if err := st.CreateUser(ctx, store.User{ID: "u1", Name: "carol", Role: store.RoleUser, CreatedAt: time.Now()}, api.HashToken(userTok)); err != nil {
		t.Fatal(err)
	}
	if err := api.EnsureAdmin(ctx, st, userTok); !errors.Is(err, api.ErrAdminToken) {
		t.Errorf("a user's token: %v, want ErrAdminToken", err)
	}
	for _, bad := range []string{"", "short-secret", strings.Repeat("x", api.MinAdminTokenLen-1), "with a space inside it"} {
		if err := api.EnsureAdmin(ctx, st, bad); err == nil {
			t.Errorf("admin token %q was accepted", bad)
		}
	}
}

// racingUsers is a store where another manager creates the admin, with
// the same token, between this one's look-up and its insert.
type racingUsers struct {
	api.Users
	token string
	once  bool
}

func (r *racingUsers) CreateUser(ctx context.Context, u store.User, hash []byte) error {
	if !r.once {
		r.once = true
		if err := api.EnsureAdmin(ctx, r.Users, r.token); err != nil {
			return err
		}
	}
	return r.Users.CreateUser(ctx, u, hash)
}

// TestEnsureAdminRace: two managers started at once on a new database
// with the same admin token both start; the one that loses the insert
// does not fail as if the token were another.
func TestEnsureAdminRace(t *testing.T) {
	t.Parallel()
	st := apitest.Open(t, "sqlite", domain.DefaultRegistry())
	tok := api.NewToken()
	if err := api.EnsureAdmin(context.Background(), &racingUsers{Users: st, token: tok}, tok); err != nil {
		t.Fatalf("the manager that lost the race: %v", err)
	}
	other := apitest.Open(t, "sqlite", domain.DefaultRegistry())
	if err := api.EnsureAdmin(context.Background(), &racingUsers{Users: other, token: api.NewToken()}, api.NewToken()); !errors.Is(err, api.ErrAdminToken) {
		t.Errorf("losing the race to another token: %v, want ErrAdminToken", err)
	}
}

func TestUsers(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	var created v1.NewUser
	code := m.Do(m.AdminToken, "POST", "/v1/users", map[string]string{"name": "dave", "role": "admin", "project": "ml"}, &created)
	if code != http.StatusCreated || created.Token == "" || created.Role != "admin" || created.Project != "ml" || created.Domain != "default" {
		t.Fatalf("create user: %d %+v", code, created)
	}
	var me v1.User
	if code := m.Do(created.Token, "GET", "/v1/me", nil, &me); code != 200 || me.Name != "dave" || me.Role != "admin" {
		t.Errorf("me with the new token: %d %+v", code, me)
	}
	for _, tc := range []struct {
		body  any
		want  int
		field string
	}{
		{map[string]string{"name": "dave"}, 409, "name"},
		{map[string]string{"name": ""}, 400, "name"},
		{map[string]string{"name": "a b"}, 400, "name"},
		{map[string]string{"name": "erin", "role": "root"}, 400, "role"},
		{map[string]string{"name": "erin", "project": "x y"}, 400, "project"},
		{map[string]any{"name": "erin", "token": "mine"}, 400, "token"},
	} {
		var e v1.ErrorResponse
		if code := m.Do(m.AdminToken, "POST", "/v1/users", tc.body, &e); code != tc.want || e.Error.Field != tc.field {
			t.Errorf("create user %v: %d field %q, want %d field %q (%s)", tc.body, code, e.Error.Field, tc.want, tc.field, e.Error.Message)
		}
	}
}

func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	m := apitest.New(t, apitest.Options{})
	alice := m.User("alice", "user", "p1")
	s := create(t, m, alice, map[string]any{"image": "sleep"})
	waitStatus(t, m, alice, s.ID, "RUNNING")
	code, body := m.Raw("", "GET", "/metrics", nil)
	if code != 200 || !strings.Contains(string(body), "sokovan_handler_runs_total") {
		t.Errorf("metrics: %d, %d bytes without the coordinator's series", code, len(body))
	}
	// Request series are by route pattern and code, and the one create
	// above is counted once.
	for _, want := range []string{`sokovan_api_requests_total{code="201",route="POST /v1/sessions"} 1`,
		`sokovan_api_request_duration_seconds_count{route="GET /v1/sessions/{id}"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	reg := domain.DefaultRegistry()
	st := apitest.Open(t, "sqlite", reg)
	down := errors.New("event bus not connected")
	srv := api.New(api.Config{}, api.Deps{Store: st, Slots: reg, Plugins: scheduler.NewRegistry(),
		Ready: func(context.Context) error { return down }})
	for _, tc := range []struct {
		path string
		want int
	}{{"/healthz", 200}, {"/readyz", 503}, {"/metrics", 501}, {"/v1/agent/x", 401}} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
		if rec.Code != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.path, rec.Code, tc.want, rec.Body)
		}
	}
	// Without an agent token configured, no token opens the agent RPC.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/v1/agent/x", nil)
	req.Header.Set("Authorization", "Bearer ")
	srv.ServeHTTP(rec, req)
	if rec.Code != 401 {
		t.Errorf("agent RPC with an empty token: %d", rec.Code)
	}
}
