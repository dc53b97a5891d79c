package probe_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/agent/runtime/probe"
)

const fast = 20 * time.Millisecond

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func start(t *testing.T, specs []probe.Spec, tg probe.Target) *probe.Set {
	t.Helper()
	s, err := probe.Start(specs, tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func status(s *probe.Set, i int) probe.Status { return s.States()[i].Status }

// An HTTP probe by port follows the server: ready after two 200s, past
// its failure threshold once it answers 503.
func TestHTTPProbe(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	s := start(t, []probe.Spec{{HTTP: &probe.HTTPGet{Port: p, Path: "/healthz"}, Period: fast, SuccessThreshold: 2, FailureThreshold: 2}},
		probe.Target{Host: host})
	eventually(t, "SUCCESS", func() bool { return status(s, 0) == probe.Success })
	if !probe.Ready(s.States()) {
		t.Error("not ready with every probe SUCCESS")
	}
	healthy.Store(false)
	eventually(t, "FAILED_THRESHOLD", func() bool { return status(s, 0) == probe.FailedThreshold })
	if probe.Ready(s.States()) {
		t.Error("ready with a probe past its failure threshold")
	}
}

// An exec probe runs in the target's directory; the kernel is ready only
// once both probes succeed.
func TestExecProbeGatesReadiness(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	s := start(t, []probe.Spec{
		{HTTP: &probe.HTTPGet{URL: srv.URL}, Period: fast},
		{Exec: []string{"test", "-f", "ready"}, Period: fast, FailureThreshold: 1},
	}, probe.Target{Dir: dir})
	eventually(t, "exec probe past its threshold", func() bool { return status(s, 1) == probe.FailedThreshold })
	if probe.Ready(s.States()) {
		t.Error("ready while the exec probe fails")
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "ready", func() bool { return probe.Ready(s.States()) })
}

// A probe that cannot run at all is UNKNOWN and keeps the kernel not
// ready, whatever the others say.
func TestProbeThatCannotRunIsUnknown(t *testing.T) {
	s := start(t, []probe.Spec{{Exec: []string{filepath.Join(t.TempDir(), "no-such-program")}, Period: fast}}, probe.Target{})
	eventually(t, "a check", func() bool { return !s.States()[0].At.IsZero() })
	if st := s.States()[0]; st.Status != probe.Unknown {
		t.Errorf("status %s (%s), want UNKNOWN", st.Status, st.Message)
	}
	if probe.Ready(s.States()) {
		t.Error("ready with an UNKNOWN probe")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		spec probe.Spec
	}{
		{"neither", probe.Spec{}},
		{"both", probe.Spec{HTTP: &probe.HTTPGet{Port: 80}, Exec: []string{"true"}}},
		{"no port", probe.Spec{HTTP: &probe.HTTPGet{Path: "/"}}},
		{"bad url", probe.Spec{HTTP: &probe.HTTPGet{URL: "ftp://x"}}},
		{"negative threshold", probe.Spec{Exec: []string{"true"}, FailureThreshold: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.spec.Validate(); !errors.Is(err, probe.ErrInvalid) {
				t.Errorf("Validate = %v, want ErrInvalid", err)
			}
		})
	}
}
