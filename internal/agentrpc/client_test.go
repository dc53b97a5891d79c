package agentrpc_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agentrpc"
)

// TestManagerClientFailsOverFromASilentManager: a manager that takes the
// call and never answers (one cut off by the network) holds an agent for
// CallTimeout, not for the client's whole timeout, before the next
// manager answers.
func TestManagerClientFailsOverFromASilentManager(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer silent.Close()
	defer close(release)
	answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agentrpc.WriteJSON(w, http.StatusOK, agentrpc.HeartbeatReply{})
	}))
	defer answering.Close()

	mc := agentrpc.NewManagerClient(silent.URL+","+answering.URL, "tok")
	mc.CallTimeout = 300 * time.Millisecond
	start := time.Now()
	if _, err := mc.Heartbeat(context.Background(), agentrpc.Heartbeat{ID: "a1", Epoch: 1}); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the call reached the answering manager after %v, want about CallTimeout (300ms)", took)
	}
	// The next call starts at the manager that answered.
	start = time.Now()
	if _, err := mc.Heartbeat(context.Background(), agentrpc.Heartbeat{ID: "a1", Epoch: 1}); err != nil || time.Since(start) > 200*time.Millisecond {
		t.Errorf("second heartbeat: %v after %v, want the answering manager at once", err, time.Since(start))
	}
}

// TestNoTokenNoAuthorization: an agent without the agent token (joining,
// or known by its certificate) sends no Authorization header, which the
// manager's API would otherwise take for a wrong token and refuse.
func TestNoTokenNoAuthorization(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		agentrpc.WriteJSON(w, http.StatusOK, agentrpc.Certificate{})
	}))
	defer srv.Close()
	if _, err := agentrpc.NewManagerClient(srv.URL, "").Join(context.Background(), agentrpc.Join{}); err != nil {
		t.Fatal(err)
	}
	if _, err := agentrpc.NewManagerClient(srv.URL, "tok").Join(context.Background(), agentrpc.Join{}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "" || got[1] != "Bearer tok" {
		t.Fatalf("Authorization headers %q, want none without a token and Bearer tok with one", got)
	}
}

// TestCloseIdleMakesANewHandshake: after CloseIdle the next call shakes
// hands again, which is how a renewed certificate reaches a manager that
// checks the certificate of every call.
func TestCloseIdleMakesANewHandshake(t *testing.T) {
	t.Parallel()
	var handshakes atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agentrpc.WriteJSON(w, http.StatusOK, agentrpc.HeartbeatReply{})
	}))
	srv.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		handshakes.Add(1)
		return nil, nil
	}}
	srv.StartTLS()
	defer srv.Close()
	mc := agentrpc.NewManagerClient(srv.URL, "")
	mc.UseTLS(srv.Client().Transport.(*http.Transport).TLSClientConfig)
	ctx := context.Background()
	for range 2 {
		if _, err := mc.Heartbeat(ctx, agentrpc.Heartbeat{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := handshakes.Load(); n != 1 {
		t.Fatalf("%d handshakes for two calls, want 1 (the connection kept)", n)
	}
	mc.CloseIdle()
	if _, err := mc.Heartbeat(ctx, agentrpc.Heartbeat{}); err != nil {
		t.Fatal(err)
	}
	if n := handshakes.Load(); n != 2 {
		t.Fatalf("%d handshakes after CloseIdle, want 2", n)
	}
}
