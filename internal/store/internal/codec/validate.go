package codec

import (
	"errors"
	"fmt"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// NewSession checks what the schema cannot: a new session has its kernels,
// one per cluster member, each naming it and placed nowhere yet. It returns
// the kernels with their session filled in where it was left empty.
func NewSession(s domain.Session, kernels []domain.Kernel) ([]domain.Kernel, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("session %s: %w: %s", s.ID, store.ErrInvalid, fmt.Sprintf(format, args...))
	}
	if len(kernels) == 0 {
		return nil, bad("a session needs at least one kernel")
	}
	if s.ClusterSize != len(kernels) {
		return nil, bad("cluster size is %d but %d kernels are given", s.ClusterSize, len(kernels))
	}
	if s.CreatedAt.IsZero() {
		return nil, bad("creation time is not set")
	}
	out := make([]domain.Kernel, len(kernels))
	for i, k := range kernels {
		switch {
		case k.SessionID == "":
			k.SessionID = s.ID
		case k.SessionID != s.ID:
			return nil, bad("kernel %s names session %s", k.ID, k.SessionID)
		}
		if k.Agent != "" {
			return nil, bad("kernel %s is already placed on %s; only a plan places kernels", k.ID, k.Agent)
		}
		out[i] = k
	}
	return out, nil
}

// KernelUpdate checks an agent event before it is applied: only a plan may
// move a kernel into a status that holds resources, because only a plan
// reserves them.
func KernelUpdate(u store.KernelUpdate, current domain.KernelStatus) error {
	if !current.HoldsResources() && u.To.HoldsResources() {
		return fmt.Errorf("kernel %s: %w: %s → %s would hold resources nobody reserved",
			u.Kernel, store.ErrInvalid, current, u.To)
	}
	return nil
}

// ErrGuard builds the error for a kernel not in an expected status.
func ErrGuard(id domain.KernelID, current domain.KernelStatus, want []domain.KernelStatus) error {
	return fmt.Errorf("kernel %s is %s, not one of %v: %w", id, current, want, store.ErrGuardFailed)
}

// ErrInconsistent reports a write that did not touch the rows its own
// checks said it would, which can only be a bug; the transaction is rolled
// back.
var ErrInconsistent = errors.New("store: write did not match what was checked")

// KernelMoves returns the statuses a bulk transition may move kernels from
// to reach to. It refuses a target that would take a kernel from holding
// nothing to holding resources, because only a plan reserves.
func KernelMoves(to domain.KernelStatus) ([]string, error) {
	var out []string
	for _, from := range domain.KernelStatuses() {
		if !domain.KernelTransitionLegal(from, to) {
			continue
		}
		if !from.HoldsResources() && to.HoldsResources() {
			return nil, fmt.Errorf("%w: kernels cannot move %s → %s outside a plan", store.ErrInvalid, from, to)
		}
		out = append(out, from.String())
	}
	return out, nil
}

// Slots decodes a stored slot vector, naming the row when it is corrupt.
func Slots(reg *domain.Registry, table, id, column, s string) (domain.Vec, error) {
	e := rowErr{table: table, id: id}
	v := e.slots(column, reg, s)
	return v, e.err
}

// Corrupt builds the error for a stored value that cannot be read.
func Corrupt(table, id, column string, err error) error {
	return &store.CorruptRowError{Table: table, ID: id, Column: column, Err: err}
}
