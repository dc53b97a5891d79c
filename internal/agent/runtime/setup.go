package runtime

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// PrivateDir makes dir absolute and creates it readable by the agent's
// user alone: runtimes keep SSH keys, job scripts and kernels' output
// there. It returns the absolute path, which kernels and jobs started
// from another working directory can still use.
func PrivateDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", err
	}
	return abs, nil
}

// ClockAndLog applies the defaults every runtime's Config gives a nil
// clock and log: time.Now, and a log that discards.
func ClockAndLog(now func() time.Time, log *slog.Logger) (func() time.Time, *slog.Logger) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return now, log
}
