package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// Spec is one readiness probe. Exactly one of HTTP and Exec is set.
type Spec struct {
	HTTP *HTTPGet
	// Exec is a command line run on the agent's host, in Dir when the
	// runtime sets it; exit status 0 is success.
	Exec []string
	// Period between checks; zero means 10s. Timeout bounds one check;
	// zero means 1s. InitialDelay is waited before the first check.
	Period, Timeout, InitialDelay time.Duration
	// SuccessThreshold and FailureThreshold count consecutive checks;
	// zero means 1 and 3, as Kubernetes defaults them.
	SuccessThreshold, FailureThreshold int
}

// HTTPGet checks that a GET answers 2xx or 3xx. URL, when set, is used as
// it is; otherwise the runtime's host for the kernel, Port and Path.
type HTTPGet struct {
	URL  string
	Port int
	Path string
}

// ErrInvalid: the spec cannot describe a probe.
var ErrInvalid = errors.New("invalid readiness probe")

// Validate says what makes the probe unusable, wrapping ErrInvalid.
func (s Spec) Validate() error {
	switch {
	case (s.HTTP == nil) == (len(s.Exec) == 0):
		return fmt.Errorf("%w: set exactly one of http and exec", ErrInvalid)
	case s.Period < 0 || s.Timeout < 0 || s.InitialDelay < 0:
		return fmt.Errorf("%w: negative period, timeout or initial delay", ErrInvalid)
	case s.SuccessThreshold < 0 || s.FailureThreshold < 0:
		return fmt.Errorf("%w: negative threshold", ErrInvalid)
	}
	if h := s.HTTP; h != nil {
		if h.URL != "" {
			u, err := url.Parse(h.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("%w: url %q is not an http(s) URL", ErrInvalid, h.URL)
			}
		} else if h.Port < 1 || h.Port > 65535 {
			return fmt.Errorf("%w: http probe needs a url or a port in 1-65535, not %d", ErrInvalid, h.Port)
		}
	}
	return nil
}

func (s Spec) withDefaults() Spec {
	if s.Period <= 0 {
		s.Period = 10 * time.Second
	}
	if s.Timeout <= 0 {
		s.Timeout = time.Second
	}
	if s.SuccessThreshold <= 0 {
		s.SuccessThreshold = 1
	}
	if s.FailureThreshold <= 0 {
		s.FailureThreshold = 3
	}
	return s
}

// Status is a probe's standing, named as seed 002 names it.
type Status string

const (
	// Unknown: not checked yet, or the check could not run.
	Unknown Status = "UNKNOWN"
	// Success: consecutive successes reached the success threshold.
	Success Status = "SUCCESS"
	// Failure: failing, or succeeding but below the success threshold.
	Failure Status = "FAILURE"
	// FailedThreshold: consecutive failures reached the failure threshold.
	FailedThreshold Status = "FAILED_THRESHOLD"
)

// State is one probe's standing.
type State struct {
	Status    Status
	Successes int // consecutive
	Failures  int // consecutive
	// Message says what the last check found, for people.
	Message string
	At      time.Time
}

// Target is where a runtime's kernel is reached: Host for HTTP probes by
// port, Dir and Env for exec probes.
type Target struct {
	Host string
	Dir  string
	Env  []string
}

// errCannotRun marks a check that could not be made at all, as opposed to
// one that ran and failed: the first leaves the probe UNKNOWN.
var errCannotRun = errors.New("probe cannot run")

// outcome of one check.
type outcome struct {
	ok  bool
	err error
}

// check runs one probe once.
func check(ctx context.Context, s Spec, tg Target, client *http.Client) outcome {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	if s.HTTP != nil {
		u := s.HTTP.URL
		if u == "" {
			host := tg.Host
			if host == "" {
				host = "127.0.0.1"
			}
			u = "http://" + net.JoinHostPort(host, strconv.Itoa(s.HTTP.Port)) + s.HTTP.Path
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return outcome{err: fmt.Errorf("%w: %v", errCannotRun, err)}
		}
		resp, err := client.Do(req)
		if err != nil {
			return outcome{err: fmt.Errorf("GET %s: %w", u, err)}
		}
		resp.Body.Close()
		if resp.StatusCode >= 200 && resp.StatusCode < 400 {
			return outcome{ok: true}
		}
		return outcome{err: fmt.Errorf("GET %s: %s", u, resp.Status)}
	}
	cmd := exec.CommandContext(ctx, s.Exec[0], s.Exec[1:]...)
	cmd.Dir, cmd.Env = tg.Dir, tg.Env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return outcome{ok: true}
	case errors.As(err, &exit) && ctx.Err() == nil:
		msg := bytes.TrimSpace(out.Bytes())
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return outcome{err: fmt.Errorf("%q exited with code %d: %s", s.Exec, exit.ExitCode(), msg)}
	case ctx.Err() != nil:
		return outcome{err: fmt.Errorf("%q timed out after %v", s.Exec, s.Timeout)}
	default:
		return outcome{err: fmt.Errorf("%w: %v", errCannotRun, err)}
	}
}

// next folds one check into a probe's state.
func next(st State, s Spec, o outcome, at time.Time) State {
	st.At = at
	switch {
	case o.ok:
		st.Successes, st.Failures, st.Message = st.Successes+1, 0, ""
		st.Status = Failure
		if st.Successes >= s.SuccessThreshold {
			st.Status = Success
		}
	case errors.Is(o.err, errCannotRun):
		st.Successes, st.Failures, st.Status, st.Message = 0, 0, Unknown, o.err.Error()
	default:
		st.Successes, st.Failures, st.Message = 0, st.Failures+1, o.err.Error()
		st.Status = Failure
		if st.Failures >= s.FailureThreshold {
			st.Status = FailedThreshold
		}
	}
	return st
}

// Ready reports whether every probe is SUCCESS; no probes is ready, as the
// seed has it.
func Ready(states []State) bool {
	for _, st := range states {
		if st.Status != Success {
			return false
		}
	}
	return true
}

// Set runs one kernel's probes. Its zero value is not usable; see Start.
type Set struct {
	specs []Spec
	mu    sync.Mutex
	state []State
	stop  context.CancelFunc
	done  chan struct{}
}

// Start validates the probes and runs each in its own goroutine until
// Stop. The caller's ctx is not kept: the set's lifetime is the kernel's,
// ended by Stop. now stamps checks; nil means time.Now.
func Start(specs []Spec, tg Target, now func() time.Time) (*Set, error) {
	for i, s := range specs {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("probe %d: %w", i, err)
		}
	}
	if now == nil {
		now = time.Now
	}
	s := &Set{specs: make([]Spec, len(specs)), state: make([]State, len(specs)), done: make(chan struct{})}
	for i, sp := range specs {
		s.specs[i] = sp.withDefaults()
		s.state[i] = State{Status: Unknown, Message: "not checked yet"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	// Redirects are followed, as Kubernetes does, but keep-alives are not:
	// a probe must see a server that stopped accepting.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var wg sync.WaitGroup
	for i := range s.specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.run(ctx, i, tg, client, now)
		}()
	}
	go func() { wg.Wait(); close(s.done) }()
	return s, nil
}

func (s *Set) run(ctx context.Context, i int, tg Target, client *http.Client, now func() time.Time) {
	sp := s.specs[i]
	wait := sp.InitialDelay
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		o := check(ctx, sp, tg, client)
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		s.state[i] = next(s.state[i], sp, o, now())
		s.mu.Unlock()
		wait = sp.Period
	}
}

// States returns each probe's standing, in spec order. A nil set has none.
func (s *Set) States() []State {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]State(nil), s.state...)
}

// Stop ends the probes and waits for their goroutines. It is safe to call
// more than once and on a nil set.
func (s *Set) Stop() {
	if s == nil {
		return
	}
	s.stop()
	<-s.done
}
