// Package storetest is the conformance suite every store engine passes:
// behaviour of each operation, its guards and typed errors, the resource
// invariant after every mutation, concurrent plan appliers, aborted plan
// applications, and corrupt rows. An engine's _test.go calls Run with an
// Engine that makes fresh databases and opens stores on them.
//
// Schema tests go through it too: Golden compares an engine's dump of the
// schema its migrations made with a file under testdata, FoldSQL folds a
// stored statement's layout away, and DownAndUp takes every migration
// down and up again through goose's Provider.
//
// It may import internal/store, internal/domain,
// internal/scheduler/framework, go-cmp, goose and the standard library,
// and is imported only by tests.
//
// Imports: internal/store, internal/domain, internal/scheduler/framework,
// github.com/google/go-cmp/..., github.com/pressly/goose/v3/....
package storetest
