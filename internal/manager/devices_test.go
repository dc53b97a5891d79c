package manager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/manager"
	"github.com/sokovan-go/sokovan/internal/store/storetest"
)

// TestDevModeDevices runs dev mode with one agent holding two fake GPUs:
// two sessions asking cuda.device=1 each run on their own device, and
// their kernels see exactly it in CUDA_VISIBLE_DEVICES; a third waits;
// when one ends, the third gets the device it freed.
func TestDevModeDevices(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	devs, err := domain.ParseFakeDevices("cuda:2")
	if err != nil {
		t.Fatal(err)
	}
	d := startDev(t, t.TempDir(), func(c *manager.DevConfig) { c.Agents, c.AgentDevices = 1, devs })
	// Kernels may run as users of their own, who cannot enter t.TempDir's
	// private parent: a directory of its own that they may write.
	out, err := os.MkdirTemp("", "sokovan-devices-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(out) })
	if err := os.Chmod(out, 0o777); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := d.info.Parts
	submit := func(id string) domain.SessionID {
		t.Helper()
		req, err := p.Slots.ParseSlots(map[string]string{"cpu": "1", "mem": "64m", "cuda.device": "1"})
		if err != nil {
			t.Fatal(err)
		}
		sid := domain.SessionID(id)
		s := domain.Session{ID: sid, Name: id, Owner: domain.Owner{User: "admin", Project: "default", Domain: "default"},
			Type: domain.TypeBatch, Image: "sleep", Architecture: "x86_64", ResourceGroup: "default",
			ClusterMode: domain.SingleNode, ClusterSize: 1, Requested: req, Status: domain.SessionPending,
			CreatedAt: time.Now(),
			Command:   []string{"sh", "-c", fmt.Sprintf(`echo "$CUDA_VISIBLE_DEVICES" > %s; exec sleep 600`, filepath.Join(out, id))}}
		k := domain.Kernel{ID: domain.KernelID(id + "-k0"), SessionID: sid, ClusterRole: domain.RoleMain,
			Image: "sleep", Architecture: "x86_64", Requested: req.Clone(), Status: domain.KernelPending}
		if err := p.Store.CreateSession(ctx, s, []domain.Kernel{k}); err != nil {
			t.Fatal(err)
		}
		p.Coordinator.Mark()
		return sid
	}
	seen := func(id domain.SessionID) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, err := os.ReadFile(filepath.Join(out, string(id)))
			if err == nil && len(b) > 0 {
				return strings.TrimSpace(string(b))
			}
			if time.Now().After(deadline) {
				t.Fatalf("kernel of %s wrote no CUDA_VISIBLE_DEVICES", id)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	device := func(id domain.SessionID) string {
		t.Helper()
		s, err := p.Store.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if g := s.Kernels[0].Devices; len(g) == 1 {
			return fmt.Sprint(g[0].Index)
		}
		t.Fatalf("%s holds devices %+v, want one", id, s.Kernels[0].Devices)
		return ""
	}

	s1, s2 := submit("gpu-1"), submit("gpu-2")
	d.waitFor(map[domain.SessionID]domain.SessionStatus{s1: domain.SessionRunning, s2: domain.SessionRunning})
	s3 := submit("gpu-3")
	if device(s1) == device(s2) {
		t.Fatalf("both sessions got device %s", device(s1))
	}
	for _, id := range []domain.SessionID{s1, s2} {
		if got, want := seen(id), device(id); got != want {
			t.Errorf("%s sees CUDA_VISIBLE_DEVICES=%q, was granted %q", id, got, want)
		}
	}
	time.Sleep(300 * time.Millisecond) // a few rounds
	d.waitFor(map[domain.SessionID]domain.SessionStatus{s3: domain.SessionPending})
	if err := storetest.CheckInvariants(ctx, p.Store); err != nil {
		t.Fatal(err)
	}

	freed := device(s1)
	if _, err := p.Coordinator.Terminate(ctx, s1, "test done", false); err != nil {
		t.Fatal(err)
	}
	d.waitFor(map[domain.SessionID]domain.SessionStatus{s1: domain.SessionTerminated, s3: domain.SessionRunning})
	if got := device(s3); got != freed {
		t.Errorf("gpu-3 got device %s, want %s, the one gpu-1 freed", got, freed)
	}
	if got := seen(s3); got != freed {
		t.Errorf("gpu-3 sees CUDA_VISIBLE_DEVICES=%q, want %q", got, freed)
	}
	for _, id := range []domain.SessionID{s2, s3} {
		if _, err := p.Coordinator.Terminate(ctx, id, "test done", false); err != nil {
			t.Fatal(err)
		}
	}
	d.waitFor(map[domain.SessionID]domain.SessionStatus{s2: domain.SessionTerminated, s3: domain.SessionTerminated})
	if err := storetest.CheckInvariants(ctx, p.Store); err != nil {
		t.Fatal(err)
	}
}
