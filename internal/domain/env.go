package domain

import (
	"fmt"
	"regexp"
	"strings"
)

// envNamePattern is what a kernel environment variable may be called: the
// portable shell name rule, so no name can smuggle "=" or a NUL.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedEnv are variables a user may not set for a kernel, because the
// runtime, the shell or the dynamic loader reads them before the user's own
// program runs: PATH picks which binary a runtime's exec finds, the LD_* and
// glibc ones load code into it, and the shell ones run code in any sh the
// image starts. glibc drops the loader list for setuid programs for the
// same reason.
var reservedEnv = map[string]bool{
	"PATH": true, "IFS": true, "ENV": true, "BASH_ENV": true, "SHELLOPTS": true, "BASHOPTS": true,
	"PS4": true, "CDPATH": true, "GLOBIGNORE": true, "PROMPT_COMMAND": true,
	"GCONV_PATH": true, "GETCONF_DIR": true, "GLIBC_TUNABLES": true, "HOSTALIASES": true,
	"LOCALDOMAIN": true, "LOCPATH": true, "NIS_PATH": true, "NLSPATH": true, "RESOLV_HOST_CONF": true,
	"RES_OPTIONS": true, "TZDIR": true,
}

// reservedEnvPrefixes cover whole families: the loader's (LD_, and DYLD_
// for the same idea elsewhere), glibc's allocator hooks, bash's exported
// functions, SOKOVAN_, whose names the runtime sets for the kernel to
// trust, and NVIDIA_, which the NVIDIA container toolkit reads to decide
// which devices to put in a container (NVIDIA_VISIBLE_DEVICES, and newer
// ones such as NVIDIA_IMEX_CHANNELS): a kernel's devices are what the
// scheduler granted, never what its environment asks for.
var reservedEnvPrefixes = []string{"LD_", "DYLD_", "MALLOC_", "BASH_FUNC_", "SOKOVAN_", "NVIDIA_"}

// UserSettableEnv are the names under a reserved prefix that a user may
// still set: SOKOVAN_EXIT_AFTER is an input of the dev images rather than
// a fact the runtime provides; NVIDIA_DRIVER_CAPABILITIES picks which of
// the driver's libraries are mounted for the devices a kernel was granted
// (graphics, video), and NVIDIA_DISABLE_REQUIRE turns off the image's
// NVIDIA_REQUIRE_* checks; none of them adds a device.
var UserSettableEnv = map[string]bool{
	"SOKOVAN_EXIT_AFTER": true, "NVIDIA_DRIVER_CAPABILITIES": true, "NVIDIA_DISABLE_REQUIRE": true,
}

// userSettablePrefixes are families under a reserved prefix that a user
// may set: NVIDIA_REQUIRE_* only constrain which driver and GPU the
// image will start on.
var userSettablePrefixes = []string{"NVIDIA_REQUIRE_"}

// CheckUserEnvName says why a user may not set the environment variable
// name for a kernel, or nil when it may.
func CheckUserEnvName(name string) error {
	if len(name) > 256 || !envNamePattern.MatchString(name) {
		return fmt.Errorf("%q is not a valid variable name (letters, digits and _, not starting with a digit)", name)
	}
	if UserSettableEnv[name] {
		return nil
	}
	for _, p := range userSettablePrefixes {
		if strings.HasPrefix(name, p) {
			return nil
		}
	}
	if reservedEnv[name] {
		return fmt.Errorf("%s is reserved: the runtime, the shell or the dynamic loader reads it before the kernel's program runs", name)
	}
	for _, p := range reservedEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("%s is reserved: names starting with %s belong to the runtime, the dynamic loader or the GPU container toolkit", name, p)
		}
	}
	return nil
}

// managerSetEnv are names under a reserved prefix that the manager itself
// sets in a session's environment, after admission has refused them from
// the user: an array element's index, count and array.
var managerSetEnv = map[string]bool{EnvArrayIndex: true, EnvArrayCount: true, EnvArrayID: true}

// CheckKernelEnvName says why an agent must refuse a kernel's environment
// variable name, or nil: what a user may set, and what the manager sets
// for it (managerSetEnv).
func CheckKernelEnvName(name string) error {
	if managerSetEnv[name] {
		return nil
	}
	return CheckUserEnvName(name)
}
