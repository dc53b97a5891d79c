// Package archtest holds the tests that keep the module's shape what its
// docs say it is; it has no code of its own.
//
// TestImportsWhatDocSays reads the last paragraph of every package's
// doc.go, which must be an Imports line and may add a Never links line:
//
//	// Imports: internal/domain, internal/store, github.com/jackc/pgx/v5/...
//	// Never links: internal/api/..., internal/store/sqlite.
//
// Each entry is an import path, the project's own relative to the module
// (internal/..., cmd/...), anyone else's in full; "p/..." stands for p and
// every package below it, as in go list's patterns, and "none" for no
// entry. Imports lists what the package may import besides the standard
// library, third-party packages included, so adding a dependency means
// saying so in doc.go; Never links lists what it must not reach even
// through other packages (go list's Deps). The lines may wrap; each ends
// with a period.
//
// TestNoLongFunction fails on a function or method over 120 lines in a
// non-test file, except those in its allowlist, which may only shrink.
//
// Imports: none.
package archtest
