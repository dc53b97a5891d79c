// Package storetest is the conformance suite every store engine passes:
// behaviour of each operation, its guards and typed errors, the resource
// invariant after every mutation, concurrent plan appliers, aborted plan
// applications, and corrupt rows. An engine's _test.go calls Run with an
// Engine that makes fresh databases and opens stores on them.
//
// It may import internal/store, internal/domain,
// internal/scheduler/framework, go-cmp and the standard library, and is
// imported only by tests.
//
// Imports: internal/store, internal/domain, internal/scheduler/framework,
// github.com/google/go-cmp/....
package storetest
