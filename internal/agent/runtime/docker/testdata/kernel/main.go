// Command kernel is the program inside the docker runtime tests' images.
// The tests build it with CGO_ENABLED=0, so the image needs nothing but
// this one static file. Its first argument picks a behaviour:
//
//	exit N     print "exiting N" and exit with code N
//	sleep      print "ready", then exit 0 on SIGTERM
//	stubborn   ignore SIGTERM, print "ready", then wait to be killed
//	report     print a JSON report (hostname, environment, the files of
//	           $SOKOVAN_CLUSTER_SSH_DIR) and exit 0
//	output     print a line to stdout, then one to stderr, and exit 0
//	alloc      touch memory a MiB at a time until stopped
//	serve      serve HTTP on $SOKOVAN_BIND_HOST:$SOKOVAN_PORT until SIGTERM:
//	           GET /health answers 200, any other path a JSON object naming
//	           the kernel ($SOKOVAN_KERNEL_ID) and the path, with the kernel
//	           in X-Sokovan-Kernel too, as the process runtime's http-echo
//	           answers
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("no behaviour given")
	}
	switch os.Args[1] {
	case "exit":
		if len(os.Args) != 3 {
			fail("usage: exit N")
		}
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fail(err.Error())
		}
		fmt.Println("exiting", n)
		os.Exit(n)
	case "sleep":
		// As PID 1 of its container the program gets no default signal
		// handling from the kernel: it must catch SIGTERM itself.
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		fmt.Println("ready")
		<-term
		fmt.Println("terminating")
		os.Exit(0)
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		for {
			time.Sleep(time.Hour)
		}
	case "report":
		report()
	case "output":
		fmt.Fprintln(os.Stdout, "to-stdout")
		fmt.Fprintln(os.Stderr, "to-stderr")
	case "serve":
		serve()
	case "alloc":
		var keep [][]byte
		for range 4096 {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		fmt.Println("allocated", len(keep), "MiB")
	default:
		fail("unknown behaviour " + os.Args[1])
	}
}

func serve() {
	port := os.Getenv("SOKOVAN_PORT")
	if port == "" {
		fail("serve: no SOKOVAN_PORT")
	}
	kernel := os.Getenv("SOKOVAN_KERNEL_ID")
	addr := net.JoinHostPort(os.Getenv("SOKOVAN_BIND_HOST"), port)
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Sokovan-Kernel", kernel)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Kernel string `json:"kernel"`
			Path   string `json:"path"`
		}{kernel, r.URL.Path})
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fail(err.Error())
	}
	// Printed once the socket listens, so a test may wait for it.
	fmt.Println("serving on", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: mux}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fail(err.Error())
	}
	fmt.Println("terminating")
}

type file struct {
	Mode    string
	Content string
}

func report() {
	host, _ := os.Hostname()
	out := struct {
		Hostname string
		Env      []string
		SSH      map[string]file
	}{Hostname: host, Env: os.Environ(), SSH: map[string]file{}}
	if dir := os.Getenv("SOKOVAN_CLUSTER_SSH_DIR"); dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			fail(err.Error())
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				fail(err.Error())
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				fail(err.Error())
			}
			out.SSH[e.Name()] = file{Mode: info.Mode().Perm().String(), Content: string(data)}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "kernel:", msg)
	os.Exit(125)
}
