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
// The roles are GateArg, the start gate every kernel of the runtime begins
// as (see Config.GateExe), WatchdogArg, the runtime's watchdog, and
// HTTPEchoArg ADDR, which serves until SIGTERM
// or SIGINT and then exits 0.
func RunChild(args []string) (code int, ok bool) {
	if len(args) == 1 && args[0] == GateArg {
		return runGate(), true
	}
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
	srv := &http.Server{
		Handler:           http.HandlerFunc(echo),
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

func echo(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(os.Stdout, "http-echo: %s %s from %s\n", r.Method, r.URL.RequestURI(), r.RemoteAddr)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEchoBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(echoed{
		Method:     r.Method,
		Path:       r.URL.Path,
		Query:      r.URL.RawQuery,
		Headers:    r.Header,
		Body:       string(body),
		RemoteAddr: r.RemoteAddr,
	})
}
