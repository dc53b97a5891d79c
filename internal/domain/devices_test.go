package domain_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
)

func TestParseFakeDevices(t *testing.T) {
	devs, err := domain.ParseFakeDevices("cuda:2,cuda.shares:1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range devs {
		got = append(got, d.ID+"/"+d.Slot)
	}
	want := []string{"cuda:0/cuda.device", "cuda:1/cuda.device", "cuda-shared:0/cuda.shares"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	if err := domain.ValidateDevices(domain.DefaultRegistry(), devs); err != nil {
		t.Errorf("ValidateDevices: %v", err)
	}
	for _, bad := range []string{"cuda", "tpu:2", "cuda:-1", "cuda:x", "cuda:65"} {
		if _, err := domain.ParseFakeDevices(bad); err == nil {
			t.Errorf("ParseFakeDevices(%q) accepted", bad)
		}
	}
}

func TestValidateDevices(t *testing.T) {
	reg := domain.DefaultRegistry()
	for name, devs := range map[string][]domain.Device{
		"empty id":     {{Slot: "cuda.device"}},
		"repeated id":  {{ID: "a", Slot: "cuda.device"}, {ID: "a", Index: 1, Slot: "cuda.device"}},
		"repeated idx": {{ID: "a", Slot: "cuda.device"}, {ID: "b", Slot: "cuda.device"}},
		"unknown slot": {{ID: "a", Slot: "tpu"}},
		"negative mem": {{ID: "a", Slot: "cuda.device", Memory: -1}},
	} {
		if err := domain.ValidateDevices(reg, devs); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func grantsOf(gs []domain.DeviceGrant) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Device+"="+domain.FormatQuantity(domain.KindShares, g.Share))
	}
	return out
}

func TestDevicePoolWholeDevices(t *testing.T) {
	devs, _ := domain.ParseFakeDevices("cuda:3")
	// cuda:1 is held by a live kernel: the pool starts from cuda:0 and cuda:2.
	pools := domain.NewDevicePools(devs, map[string]domain.Quantity{"cuda:1": domain.WholeShare})
	p := pools["cuda.device"]
	if got := p.Available(domain.KindCount); got != 2000 {
		t.Fatalf("Available = %d, want 2000", got)
	}
	g, ok := p.Assign(domain.KindCount, 2000)
	if !ok {
		t.Fatal("Assign(2) failed with two devices free")
	}
	if diff := cmp.Diff([]string{"cuda:0=1", "cuda:2=1"}, grantsOf(g)); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	if g[0].Memory != 16<<30 {
		t.Errorf("memory of a whole device = %d, want %d", g[0].Memory, int64(16<<30))
	}
	if _, ok := p.Assign(domain.KindCount, 1000); ok {
		t.Error("Assign succeeded on a pool with no free device")
	}
	p.Give(g[:1])
	p.Give(g[:1]) // giving twice must not make a device more than free
	if got := p.Available(domain.KindCount); got != 1000 {
		t.Errorf("Available after giving one back twice = %d, want 1000", got)
	}
}

func TestDevicePoolSharesPack(t *testing.T) {
	devs, _ := domain.ParseFakeDevices("cuda.shares:2")
	p := domain.NewDevicePools(devs, nil)["cuda.shares"]
	steps := []struct {
		q    domain.Quantity
		want []string
	}{
		// 0.5 goes on the first device; 0.3 best-fits the fuller one
		// (0.5 free) rather than the empty one.
		{500, []string{"cuda-shared:0=0.5"}},
		{300, []string{"cuda-shared:0=0.3"}},
		// 0.9 fits only the empty device whole.
		{900, []string{"cuda-shared:1=0.9"}},
		// 0.25 fits no single device (0.2 and 0.1 free): it is split,
		// the device with more free first.
		{250, []string{"cuda-shared:0=0.2", "cuda-shared:1=0.05"}},
	}
	for i, s := range steps {
		g, ok := p.Assign(domain.KindShares, s.q)
		if !ok {
			t.Fatalf("step %d: Assign(%d) failed", i, s.q)
		}
		if diff := cmp.Diff(s.want, grantsOf(g)); diff != "" {
			t.Errorf("step %d grants (-want +got):\n%s", i, diff)
		}
	}
	if _, ok := p.Assign(domain.KindShares, 100); ok {
		t.Error("Assign(0.1) succeeded with only 0.05 free")
	}
	g, _ := p.Assign(domain.KindShares, 50)
	if g[0].Memory != (16<<30)/20 {
		t.Errorf("memory of a 0.05 share = %d, want %d", g[0].Memory, int64(16<<30)/20)
	}
}
