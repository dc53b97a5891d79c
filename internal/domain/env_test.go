package domain_test

import (
	"testing"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestCheckUserEnvName: the names that choose a container's GPUs are the
// scheduler's, not the user's; those that only pick driver features or
// constrain the image stay settable.
func TestCheckUserEnvName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"FOO", true},
		{"CUDA_VISIBLE_DEVICES", true}, // narrows what the kernel already holds
		{"NVIDIA_DRIVER_CAPABILITIES", true},
		{"NVIDIA_REQUIRE_CUDA", true},
		{"NVIDIA_DISABLE_REQUIRE", true},
		{"SOKOVAN_EXIT_AFTER", true},
		{"NVIDIA_VISIBLE_DEVICES", false},
		{"NVIDIA_IMEX_CHANNELS", false},
		{"NVIDIA_MIG_CONFIG_DEVICES", false},
		{"SOKOVAN_DEVICES", false},
		{"LD_PRELOAD", false},
		{"PATH", false},
		{"1X", false},
	} {
		err := domain.CheckUserEnvName(tc.name)
		if got := err == nil; got != tc.ok {
			t.Errorf("CheckUserEnvName(%q) = %v, want settable %t", tc.name, err, tc.ok)
		}
	}
}

// An array element's variables are set by the manager after admission:
// a user may not set them, an agent accepts them.
func TestCheckKernelEnvName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{domain.EnvArrayIndex, domain.EnvArrayCount, domain.EnvArrayID} {
		if domain.CheckUserEnvName(name) == nil {
			t.Errorf("a user may set %s", name)
		}
		if err := domain.CheckKernelEnvName(name); err != nil {
			t.Errorf("CheckKernelEnvName(%s) = %v, want nil", name, err)
		}
	}
	for _, name := range []string{"SOKOVAN_BIND_HOST", "LD_PRELOAD", "PATH"} {
		if domain.CheckKernelEnvName(name) == nil {
			t.Errorf("an agent accepts %s", name)
		}
	}
}
