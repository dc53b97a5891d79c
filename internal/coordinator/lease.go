package coordinator

import "context"

// Lease says whether this manager may run the handlers now. With several
// managers exactly one holds it at a time; correctness never depends on it
// (the store's guards do that) — it keeps managers from doing the same work
// twice.
type Lease interface {
	Held(ctx context.Context) bool
}

// alwaysHeld is the lease of a manager that is alone (SQLite, dev mode).
type alwaysHeld struct{}

func (alwaysHeld) Held(context.Context) bool { return true }
