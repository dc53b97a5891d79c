//go:build !linux

package main

import "os"

// isTTY reports whether f is a terminal a person can answer on; outside
// Linux a character device is taken for one.
func isTTY(f *os.File) bool { return isTerminal(f) }
