// Package schedtest builds snapshots, agents and sessions for scheduler
// tests, in the style of kube-scheduler's MakePod().Req(...).Obj(). It is
// imported only by tests.
//
// It may import internal/domain, internal/scheduler/framework and the
// standard library.
//
// Imports: internal/domain, internal/scheduler/framework.
package schedtest
