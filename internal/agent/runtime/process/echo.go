package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// RunChild runs the child role args name, when they name one, and reports
// the exit code the process should end with. args are os.Args[1:]. A binary
// that serves as DefaultCatalog's selfExe calls it first thing in main:
//
//	if code, ok := process.RunChild(os.Args[1:]); ok {
//		os.Exit(code)
//	}
//
// The roles are WatchdogArg, the runtime's watchdog (see
// Config.WatchdogExe), and HTTPEchoArg ADDR, which serves until SIGTERM
// or SIGINT and then exits 0 (a websocket echo at EchoWebsocketPath).
func RunChild(args []string) (code int, ok bool) {
	if len(args) == 1 && args[0] == WatchdogArg {
		return runWatchdog(os.Stdin), true
	}
	if len(args) == 0 || args[0] != HTTPEchoArg {
		return 0, false
	}
	if len(args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: %s HOST:PORT\n", HTTPEchoArg)
		return 2, true
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := ServeHTTPEcho(ctx, args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "http-echo: %v\n", err)
		return 1, true
	}
	return 0, true
}

// echoed is the JSON body http-echo answers with.
type echoed struct {
	// Kernel is the kernel serving the answer, so a client behind a
	// deployment's proxy can see requests spread over replicas.
	Kernel     string      `json:"kernel,omitempty"`
	Method     string      `json:"method"`
	Path       string      `json:"path"`
	Query      string      `json:"query,omitempty"`
	Headers    http.Header `json:"headers"`
	Body       string      `json:"body"`
	RemoteAddr string      `json:"remote_addr"`
}

// maxEchoBody bounds what one request may make the server hold.
const maxEchoBody = 1 << 20

// ServeHTTPEcho serves HTTP on addr until ctx ends, answering every request
// with 200 and a JSON description of it (method, path, query, headers,
// body). It returns nil after a clean shutdown.
func ServeHTTPEcho(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// The kernel's log is where its user looks first for where it serves.
	fmt.Fprintf(os.Stdout, "http-echo: listening on http://%s\n", ln.Addr())
	e := &echoServer{kernel: os.Getenv(envKernelID)}
	e.sick.Store(os.Getenv(EnvEchoSick) != "")
	srv := &http.Server{
		Handler:           e,
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// The kernel's destroy grace bounds this in practice; the timeout keeps
	// a stuck client from holding the process past it on its own.
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// EnvEchoSick, set to anything non-empty, starts http-echo sick: its
// health path answers 503 while everything else is served, so a test can
// make a replica fail its health checks without killing it.
const EnvEchoSick = "SOKOVAN_ECHO_SICK"

// http-echo's own paths. A POST to the control paths makes it sick or
// well at run time; the health path answers 200, or 503 while sick.
const (
	EchoHealthPath = "/health"
	EchoSickPath   = "/__sokovan/sick"
	EchoWellPath   = "/__sokovan/well"
)

// envKernelID is runtime.EnvKernelID, named here so the child, which runs
// without the runtime package's state, reads the same variable.
const envKernelID = "SOKOVAN_KERNEL_ID"

// KernelHeader carries the answering kernel's id on every answer.
const KernelHeader = "X-Sokovan-Kernel"

type echoServer struct {
	kernel string
	sick   atomic.Bool
}

func (e *echoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e.kernel != "" {
		w.Header().Set(KernelHeader, e.kernel)
	}
	switch {
	case r.URL.Path == EchoSickPath && r.Method == http.MethodPost:
		e.sick.Store(true)
		fmt.Fprintln(os.Stdout, "http-echo: now sick: health checks fail")
		w.WriteHeader(http.StatusNoContent)
		return
	case r.URL.Path == EchoWellPath && r.Method == http.MethodPost:
		e.sick.Store(false)
		fmt.Fprintln(os.Stdout, "http-echo: well again")
		w.WriteHeader(http.StatusNoContent)
		return
	case r.URL.Path == EchoHealthPath && e.sick.Load():
		http.Error(w, "sick", http.StatusServiceUnavailable)
		return
	case r.URL.Path == EchoWebsocketPath:
		echoWebsocket.ServeHTTP(w, r)
		return
	}
	echo(w, r, e.kernel)
}

// maxEchoSleep bounds the ?sleep= a request may ask for.
const maxEchoSleep = 10 * time.Second

func echo(w http.ResponseWriter, r *http.Request, kernel string) {
	fmt.Fprintf(os.Stdout, "http-echo: %s %s from %s\n", r.Method, r.URL.RequestURI(), r.RemoteAddr)
	// ?sleep=DURATION holds the answer that long, as a slow model would,
	// so tests can keep requests in flight.
	if v := r.URL.Query().Get("sleep"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > maxEchoSleep {
			http.Error(w, fmt.Sprintf("sleep must be a duration up to %s", maxEchoSleep), http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEchoBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(echoed{
		Kernel:     kernel,
		Method:     r.Method,
		Path:       r.URL.Path,
		Query:      r.URL.RawQuery,
		Headers:    r.Header,
		Body:       string(body),
		RemoteAddr: r.RemoteAddr,
	})
}
