package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTTY reports whether f is a terminal a person can answer on. Unlike
// isTerminal it does not take /dev/null, a character device too, for one.
func isTTY(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
