package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestFormatUUIDIsNVMLs(t *testing.T) {
	u := [16]byte{0xf1, 0xa0, 0xac, 0x25, 0xb8, 0x51, 0x90, 0x5e, 0x5d, 0xd1, 0x72, 0x09, 0x52, 0xdc, 0xbc, 0xec}
	if got, want := formatUUID(u), "GPU-f1a0ac25-b851-905e-5dd1-720952dcbcec"; got != want {
		t.Fatalf("formatUUID = %s, want %s", got, want)
	}
}

func TestSMIListsExactlyTheGrant(t *testing.T) {
	one := []string{"GPU 0: NVIDIA H200 (UUID: GPU-a)"}
	two := append(one, "GPU 1: NVIDIA H200 (UUID: GPU-b)")
	if err := smiLists(one, "GPU-a"); err != nil {
		t.Errorf("one device, granted it: %v", err)
	}
	if err := smiLists(two, "GPU-a"); err == nil {
		t.Error("two devices listed for one granted: no error")
	}
	if err := smiLists(one, "GPU-b"); err == nil {
		t.Error("another device listed than granted: no error")
	}
}

// Without a GPU the checker must say so and succeed, checking nothing:
// CI machines run it that way.
func TestNoGPUChecksNothing(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("this machine has nvidia-smi; scripts/gpu-check runs the real checks")
	}
	if os.Getenv("GPUCHECK_CHILD") == "1" {
		os.Exit(run(nil))
	}
	cmd := exec.Command(os.Args[0], "-test.run=TestNoGPUChecksNothing")
	cmd.Env = append(os.Environ(), "GPUCHECK_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("exit %v, want 0: %s", err, out)
	}
	if !strings.Contains(string(out), "no NVIDIA GPU here") || !strings.Contains(string(out), "nothing checked") {
		t.Fatalf("output %q does not say nothing was checked", out)
	}
}
