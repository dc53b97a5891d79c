package manager

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoredAdminTokenIsKept: dev mode restarted with another admin's
// token in SOKOVAN_ADMIN_TOKEN runs with it, but the token the data dir
// was made with stays in admin-token; replacing it left that token
// nowhere (issue 28's probe).
func TestStoredAdminTokenIsKept(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admin-token")
	read := func() string {
		t.Helper()
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(raw))
	}
	if err := saveAdminToken(dir, "skv_first-admin-token"); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "skv_first-admin-token" {
		t.Fatalf("first save: %q", got)
	}
	if err := saveAdminToken(dir, "skv_another-admins-token"); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "skv_first-admin-token" {
		t.Fatalf("a second admin's token replaced the stored one: %q", got)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("admin-token: %v, mode %v", err, info.Mode())
	}
	// An empty file holds no token to keep.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := saveAdminToken(dir, "skv_another-admins-token"); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "skv_another-admins-token" {
		t.Fatalf("an empty admin-token was not filled: %q", got)
	}
}
