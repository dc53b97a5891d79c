// Package manager wires one manager process: it opens the store, builds
// the scheduler, the coordinator, the agent gateway and the HTTP server, and
// runs them until its context ends. `sokovan server` and `sokovan dev` are
// thin layers over it.
//
// It may import every internal package; nothing imports it but cmd.
package manager
