package runtime

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseExitCode parses the N of the exit:N catalog image. Only plain
// decimal 0-255 is accepted, so "exit:+3" or "exit:1e2" are unknown images
// rather than surprising aliases, whichever runtime runs them.
func ParseExitCode(p string) (int, error) {
	if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
		return 0, fmt.Errorf("exit code %q is not a number from 0 to 255", p)
	}
	n, _ := strconv.Atoi(p)
	if n > 255 {
		return 0, fmt.Errorf("exit code %d is outside 0-255", n)
	}
	return n, nil
}

// ExitAfterSh is the sh command with which an exit:code kernel waits
// SOKOVAN_EXIT_AFTER seconds, 1 when unset. sleep(1) parses the value (it
// takes fractions); one it refuses is a user error the kernel's log should
// explain, so the kernel exits 125 with a line saying why rather than a
// silent exit code.
func ExitAfterSh(code int) string {
	return fmt.Sprintf(`sleep "${SOKOVAN_EXIT_AFTER:-1}" || { echo "exit:%[1]d: SOKOVAN_EXIT_AFTER=$SOKOVAN_EXIT_AFTER is not a number of seconds" >&2; exit 125; }`, code)
}
