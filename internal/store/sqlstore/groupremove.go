package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// RemoveResourceGroup removes a drained, empty group. The group's row is
// locked first; CreateSession reads it under a shared lock and
// RegisterAgent writes it, so a creation or registration either committed
// before the counts (and is counted) or waits and then finds the group
// REMOVED.
func (s *Store) RemoveResourceGroup(ctx context.Context, name string, at time.Time) (domain.ResourceGroup, error) {
	var out domain.ResourceGroup
	err := s.write(ctx, "remove resource group "+name, func(tx txn) error {
		var state string
		found := false
		err := tx.query(ctx, lockGroupForRemove, []any{name}, func(sc codec.Scanner) error {
			found = true
			return sc.Scan(&state)
		})
		if err != nil {
			return err
		}
		if !found || state == domain.GroupRemoved.String() {
			return fmt.Errorf("resource group %s: %w", name, store.ErrNotFound)
		}
		st, err := domain.ParseGroupState(state)
		if err != nil {
			return &store.CorruptRowError{Table: "resource_groups", ID: name, Column: "state", Err: err}
		}
		if st != domain.GroupDraining {
			return &store.GroupRemoveError{Group: name, State: st}
		}
		var live, agents int64
		err = tx.batch(ctx,
			Stmt{SQL: countGroupLiveSessions, Args: []any{name}, Row: func(sc codec.Scanner) error { return sc.Scan(&live) }},
			Stmt{SQL: countGroupAgents, Args: []any{name}, Row: func(sc codec.Scanner) error { return sc.Scan(&agents) }})
		if err != nil {
			return err
		}
		if live > 0 || agents > 0 {
			return &store.GroupRemoveError{Group: name, State: st, LiveSessions: int(live), Agents: int(agents)}
		}
		if out, err = codec.ScanGroup(s.reg, tx.queryRow(ctx, selectGroup, name)); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, removeGroup, name, ts(at)); err != nil {
			return err
		}
		out.State = domain.GroupRemoved
		return nil
	})
	return out, err
}

// checkGroupTakesAgents refuses a registration into a removed group. It
// runs after the registration has bumped the group's generation, which
// holds the group's row (agents before groups, the order every writer
// keeps), so a removal cannot miss an agent that registers meanwhile.
func (s *Store) checkGroupTakesAgents(ctx context.Context, tx txn, group string) error {
	var state string
	err := tx.query(ctx, selectGroupStateShared, []any{group}, func(sc codec.Scanner) error { return sc.Scan(&state) })
	if err != nil {
		return err
	}
	if state == domain.GroupRemoved.String() {
		return fmt.Errorf("resource group %s: %w", group, store.ErrGroupRemoved)
	}
	return nil
}
