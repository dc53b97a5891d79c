// Package multihost holds the multi-host test: a cluster of sokovan
// processes on one Linux machine, each "host" a network namespace of its
// own on a bridge, so that nothing reaches another host through loopback.
// It needs root and iproute2; it has no code of its own.
//
// Imports: none.
package multihost
