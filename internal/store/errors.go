package store

import (
	"errors"
	"fmt"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Error classes. Engines wrap them with %w and add what failed, so callers
// use errors.Is and never look at the text.
var (
	// ErrNotFound: the row asked for, or one it refers to, does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a row with the same key already exists.
	ErrConflict = errors.New("conflict")
	// ErrGuardFailed: the row exists but is not in the state the caller
	// expected (a stale from-status, an old agent epoch).
	ErrGuardFailed = errors.New("guard failed")
	// ErrInvalid: the input breaks a rule of the schema or of the store.
	ErrInvalid = errors.New("invalid")
	// ErrCorrupt: a stored row cannot be read back; see CorruptRowError.
	ErrCorrupt = errors.New("corrupt row")
	// ErrLimitReached: a limit the caller asked the store to keep would be
	// exceeded; see LimitError.
	ErrLimitReached = errors.New("limit reached")
	// ErrNameTaken: a live session of the same owner already has the
	// name a new session asks for. It is a conflict.
	ErrNameTaken = fmt.Errorf("%w: a live session of the owner has that name", ErrConflict)
	// ErrGroupRemoved: the resource group named was removed; it takes
	// no agent until its name is created again. It is a conflict.
	ErrGroupRemoved = fmt.Errorf("%w: the resource group was removed", ErrConflict)
	// ErrUnavailable: the database failed or was busy for too long; the same
	// call may succeed later.
	ErrUnavailable = errors.New("store unavailable")
)

// CorruptRowError reports a stored row that cannot be decoded, naming the
// table, the row and the column, so an operator can find and repair it.
type CorruptRowError struct {
	Table  string
	ID     string
	Column string
	Err    error
}

func (e *CorruptRowError) Error() string {
	return fmt.Sprintf("corrupt row in %s (id %q), column %s: %v", e.Table, e.ID, e.Column, e.Err)
}

// Unwrap returns the decoding error.
func (e *CorruptRowError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) hold for every corrupt-row error.
func (e *CorruptRowError) Is(target error) bool { return target == ErrCorrupt }

// LimitError reports a PendingLimit already reached: Pending sessions of
// the limit's owner are PENDING (counted no further than its Max).
type LimitError struct {
	Limit   PendingLimit
	Pending int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s %s already has %d PENDING sessions (at most %d)",
		e.Limit.Scope, e.Limit.Name, e.Pending, e.Limit.Max)
}

// Is makes errors.Is(err, ErrLimitReached) hold for every limit error.
func (e *LimitError) Is(target error) bool { return target == ErrLimitReached }

// GroupClosedError reports a session refused because its resource group,
// read in the creating transaction, no longer admits new sessions
// (DRAINING). It is a conflict: the group's state, not the request, is in
// the way.
type GroupClosedError struct {
	Group string
	State domain.GroupState
}

func (e *GroupClosedError) Error() string {
	return fmt.Sprintf("resource group %s is %s and accepts no new sessions", e.Group, e.State)
}

// Is makes errors.Is(err, ErrConflict) hold for every closed-group error.
func (e *GroupClosedError) Is(target error) bool { return target == ErrConflict }

// GroupRemoveError reports why a resource group cannot be removed: it is
// not DRAINING, or it still holds live sessions or ALIVE or LOST agents.
type GroupRemoveError struct {
	Group        string
	State        domain.GroupState
	LiveSessions int
	Agents       int
}

func (e *GroupRemoveError) Error() string {
	if e.State != domain.GroupDraining {
		return fmt.Sprintf("resource group %s is %s, not DRAINING", e.Group, e.State)
	}
	return fmt.Sprintf("resource group %s still holds %d live sessions and %d agents", e.Group, e.LiveSessions, e.Agents)
}

// Is makes errors.Is(err, ErrConflict) hold for every such error.
func (e *GroupRemoveError) Is(target error) bool { return target == ErrConflict }

// AgentRetireError reports why an agent cannot be retired: it is not
// LOST, or it still holds Kernels in a resource-holding status.
type AgentRetireError struct {
	Agent   domain.AgentID
	Status  domain.AgentStatus
	Kernels int
}

func (e *AgentRetireError) Error() string {
	if e.Status != domain.AgentLost {
		return fmt.Sprintf("agent %s is %s, not LOST", e.Agent, e.Status)
	}
	return fmt.Sprintf("agent %s still holds %d kernels", e.Agent, e.Kernels)
}

// Is makes errors.Is(err, ErrConflict) hold for every such error.
func (e *AgentRetireError) Is(target error) bool { return target == ErrConflict }
