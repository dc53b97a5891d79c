// Package manager wires one manager process: it opens the store, builds
// the scheduler, the coordinator, the agent gateway and the HTTP server, and
// runs them until its context ends. `sokovan server` and `sokovan dev` are
// thin layers over it. Beside the coordinator it runs the utilisation
// Sampler, which samples every group into the store only while this
// manager holds the coordinator's lease, so replicas never sample twice.
//
// It may import every internal package; nothing imports it but cmd.
//
// Imports: internal/..., github.com/prometheus/client_golang/...,
// golang.org/x/sync/errgroup, golang.org/x/sys/unix.
package manager
