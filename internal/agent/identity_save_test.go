package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// A temporary file an earlier run left behind with a wider mode must not
// lend it to the key: the agent's key is readable by the agent's user
// alone, whatever the directory holds.
func TestSaveKeepsKeyPrivateOverLeftoverFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{pairFile, caFile} {
		leftover := filepath.Join(dir, name+".tmp")
		if err := os.WriteFile(leftover, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(leftover, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := save(dir, []byte("KEY"), []byte("CERT"), []byte("CA")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{pairFile, caFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", name, mode)
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, pairFile))
	if err != nil || string(got) != "CERTKEY" {
		t.Fatalf("%s = %q, %v; want the certificate then the key", pairFile, got, err)
	}
}
