package simulate

import (
	"os"
	"runtime/debug"
)

// BatchGC sets the garbage collector for a process that does nothing but
// simulate, and returns what undoes it. A run allocates about a snapshot
// every round and keeps little of it, so at the default GOGC=100 the
// collector ran many times a round and took about a tenth of the time;
// at 400 it runs a quarter as often, and the soft limit makes it collect
// harder again before a large run's heap passes 1.5 GiB. A GOGC the
// user set is left alone. Not for a manager, which serves while it
// estimates.
func BatchGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	pct := debug.SetGCPercent(400)
	limit := debug.SetMemoryLimit(3 << 29)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}
