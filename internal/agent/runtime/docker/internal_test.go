package docker

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"

	"github.com/sokovan-go/sokovan/internal/agent/runtime"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// frame encodes one frame of the engine's multiplexed log stream.
func frame(stream byte, payload string) []byte {
	b := make([]byte, 8, 8+len(payload))
	b[0] = stream
	binary.BigEndian.PutUint32(b[4:], uint32(len(payload)))
	return append(b, payload...)
}

func TestDemux(t *testing.T) {
	t.Parallel()
	cat := func(fs ...[]byte) []byte { return bytes.Join(fs, nil) }
	tests := []struct {
		name    string
		in      []byte
		want    string
		wantErr string
	}{
		{"empty", nil, "", ""},
		{"interleaved streams keep their order", cat(frame(1, "out1\n"), frame(2, "err1\n"), frame(1, "out2\n")), "out1\nerr1\nout2\n", ""},
		{"empty frame", cat(frame(1, ""), frame(2, "x")), "x", ""},
		{"engine error frame", cat(frame(1, "a"), frame(3, "log driver broke")), "a", "log driver broke"},
		{"truncated header", cat(frame(1, "a"), []byte{1, 0, 0}), "a", "inside a frame header"},
		{"truncated payload", frame(1, "abcdef")[:10], "ab", io.ErrUnexpectedEOF.Error()},
		{"unknown stream", frame(9, "x"), "", "unknown stream 9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// One byte at a time, so frame and read boundaries never line up.
			d := newDemux(io.NopCloser(iotest.OneByteReader(bytes.NewReader(tc.in))))
			got, err := io.ReadAll(d)
			if string(got) != tc.want {
				t.Errorf("read %q, want %q", got, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"under the limit", 10, []string{"abc", "def"}, "abcdef"},
		{"many small writes", 4, []string{"ab", "cd", "ef", "gh", "ij"}, "ghij"},
		{"one big write", 4, []string{"ab", "0123456789"}, "6789"},
		{"exactly the limit", 3, []string{"abc"}, "abc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb := &tailBuffer{max: tc.max}
			for _, w := range tc.writes {
				if n, err := tb.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := string(tb.Bytes()); got != tc.want {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDescribeExit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		st         *container.State
		destroying bool
		polite     bool
		wantCode   int
		wantReason domain.ExitReason
		wantMsg    string
	}{
		{"clean exit", &container.State{ExitCode: 0}, false, false, 0, domain.ReasonExited, "exited with code 0"},
		{"exit 3", &container.State{ExitCode: 3}, false, false, 3, domain.ReasonExited, "exited with code 3"},
		{"exit 128 is no signal", &container.State{ExitCode: 128}, false, false, 128, domain.ReasonExited, "exited with code 128"},
		{"segfault", &container.State{ExitCode: 139}, false, false, 139, domain.ReasonSignaled, "killed by signal SIGSEGV"},
		{"oom", &container.State{ExitCode: 137, OOMKilled: true}, false, false, 137, domain.ReasonOOMKilled,
			"killed by signal SIGKILL: the memory limit was hit and the OOM killer ended a process of the kernel"},
		{"destroyed, left on SIGTERM", &container.State{ExitCode: 143}, true, true, 143, domain.ReasonDestroyed, "destroyed: killed by signal SIGTERM"},
		{"destroyed after the grace", &container.State{ExitCode: 137}, true, true, 137, domain.ReasonDestroyed,
			"destroyed: killed by signal SIGKILL after the grace period"},
		{"destroyed with no grace", &container.State{ExitCode: 137}, true, false, 137, domain.ReasonDestroyed, "destroyed: killed by signal SIGKILL"},
		{"engine error", &container.State{ExitCode: 127, Error: "exec: no such file"}, false, false, 127, domain.ReasonExited,
			"exited with code 127 (engine: exec: no such file)"},
		{"removed behind our back", nil, false, false, -1, domain.ReasonExited,
			"the container was removed outside this runtime; its exit code is unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, reason, msg := describeExit(tc.st, tc.destroying, tc.polite)
			if code != tc.wantCode || reason != tc.wantReason || msg != tc.wantMsg {
				t.Errorf("describeExit = %d, %q, %q; want %d, %q, %q", code, reason, msg, tc.wantCode, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

func TestClassifyPull(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	engine := func(class error) error { return fmt.Errorf("engine says no: %w", class) }
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"not found", context.Background(), engine(cerrdefs.ErrNotFound), runtime.ErrUnknownImage},
		{"unauthorized", context.Background(), engine(cerrdefs.ErrUnauthenticated), runtime.ErrUnknownImage},
		{"forbidden", context.Background(), engine(cerrdefs.ErrPermissionDenied), runtime.ErrUnknownImage},
		{"bad reference", context.Background(), engine(cerrdefs.ErrInvalidArgument), runtime.ErrUnknownImage},
		{"engine failure", context.Background(), engine(cerrdefs.ErrInternal), runtime.ErrPullFailed},
		{"unclassified", context.Background(), errors.New("connection reset"), runtime.ErrPullFailed},
		{"cancelled, even if the error says not found", cancelled, engine(cerrdefs.ErrNotFound), runtime.ErrPullFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := classifyPull(tc.ctx, "img:1", tc.err)
			if !errors.Is(err, tc.want) {
				t.Errorf("classifyPull = %v, want %v", err, tc.want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("classifyPull = %v does not wrap the engine's error", err)
			}
			if !strings.HasPrefix(err.Error(), `image "img:1": `) {
				t.Errorf("message %q does not start with the image", err)
			}
		})
	}
}

func TestClusterKeys(t *testing.T) {
	t.Parallel()
	newRT := func(secret []byte) *Runtime {
		return &Runtime{
			cfg:     Config{DataDir: t.TempDir(), ClusterKeySecret: secret},
			kernels: runtime.NewTable[box](runtime.NewOutbox(nil), time.Now),
		}
	}
	t.Run("stored per session and reused", func(t *testing.T) {
		r := newRT(nil)
		a1, err := r.clusterKey("s1")
		if err != nil {
			t.Fatal(err)
		}
		a2, err := r.clusterKey("s1")
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.clusterKey("s2")
		if err != nil {
			t.Fatal(err)
		}
		if !a1.Equal(a2) || a1.Equal(b) {
			t.Errorf("same session: equal %v (want true); other session: equal %v (want false)", a1.Equal(a2), a1.Equal(b))
		}
		info, err := os.Stat(filepath.Join(r.cfg.DataDir, "sessions", "s1", "id_cluster"))
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("stored key: %v, mode %v; want 0600", err, info.Mode())
		}
		// Dropped with the session's last kernel, and a new one made after.
		r.log = slog.New(slog.DiscardHandler)
		r.dropSessionKeyIfUnused("s1")
		a3, err := r.clusterKey("s1")
		if err != nil {
			t.Fatal(err)
		}
		if a3.Equal(a1) {
			t.Errorf("key survived the drop of its session")
		}
	})
	t.Run("derived from a shared secret", func(t *testing.T) {
		secret := []byte("cluster secret")
		k1, _ := newRT(secret).clusterKey("s1")
		k2, _ := newRT(secret).clusterKey("s1")
		other, _ := newRT(secret).clusterKey("s2")
		otherSecret, _ := newRT([]byte("another")).clusterKey("s1")
		if !k1.Equal(k2) {
			t.Errorf("two agents with one secret derived different keys for one session")
		}
		if k1.Equal(other) || k1.Equal(otherSecret) {
			t.Errorf("a key repeats across sessions or secrets")
		}
		if len(k1) != ed25519.PrivateKeySize {
			t.Errorf("key length %d", len(k1))
		}
	})
}
