package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatalf("version: %v", err)
	}
	if got := out.String(); !strings.HasPrefix(got, "sokovan ") {
		t.Fatalf("version printed %q, want it to start with %q", got, "sokovan ")
	}
}

func TestUnknownCommandFails(t *testing.T) {
	root := newRoot()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"no-such-verb"})
	if err := root.Execute(); err == nil {
		t.Fatal("unknown verb succeeded; want an error")
	}
}
