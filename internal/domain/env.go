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
// functions, and SOKOVAN_, whose names the runtime sets for the kernel to
// trust.
var reservedEnvPrefixes = []string{"LD_", "DYLD_", "MALLOC_", "BASH_FUNC_", "SOKOVAN_"}

// UserSettableEnv are the SOKOVAN_ names that are documented inputs of the
// dev images rather than facts the runtime provides.
var UserSettableEnv = map[string]bool{"SOKOVAN_EXIT_AFTER": true}

// CheckUserEnvName says why a user may not set the environment variable
// name for a kernel, or nil when it may.
func CheckUserEnvName(name string) error {
	if len(name) > 256 || !envNamePattern.MatchString(name) {
		return fmt.Errorf("%q is not a valid variable name (letters, digits and _, not starting with a digit)", name)
	}
	if UserSettableEnv[name] {
		return nil
	}
	if reservedEnv[name] {
		return fmt.Errorf("%s is reserved: the runtime, the shell or the dynamic loader reads it before the kernel's program runs", name)
	}
	for _, p := range reservedEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("%s is reserved: names starting with %s belong to the runtime or the dynamic loader", name, p)
		}
	}
	return nil
}
