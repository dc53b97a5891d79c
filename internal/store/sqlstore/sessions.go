package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// CreateSession stores a new PENDING session with its kernels and
// dependencies, all or nothing, in one batch; limits add one batch before
// it that counts under their locks.
func (s *Store) CreateSession(ctx context.Context, sess domain.Session, kernels []domain.Kernel, limits ...store.PendingLimit) error {
	limits, err := lockOrder(limits)
	if err != nil {
		return err
	}
	stmts, err := s.sessionStmts(nil, sess, kernels)
	if err != nil {
		return err
	}
	return s.write(ctx, "create session "+string(sess.ID), func(tx txn) error {
		if err := s.checkName(ctx, tx, sess.Owner.User, sess.Name); err != nil {
			return err
		}
		if err := s.checkLimits(ctx, tx, limits, 1); err != nil {
			return err
		}
		if err := s.checkGroupAdmits(ctx, tx, sess.ResourceGroup); err != nil {
			return err
		}
		return tx.batch(ctx, stmts...)
	})
}

// sessionStmts appends to stmts the inserts of a new session: its row,
// its kernels' and its dependencies'.
func (s *Store) sessionStmts(stmts []Stmt, sess domain.Session, kernels []domain.Kernel) ([]Stmt, error) {
	kernels, err := codec.NewSession(sess, kernels)
	if err != nil {
		return nil, err
	}
	sessionArgs, err := codec.SessionArgs(s.reg, sess, ts)
	if err != nil {
		return nil, err
	}
	stmts = slices.Grow(stmts, 1+len(kernels)+len(sess.DependsOn))
	stmts = append(stmts, Stmt{SQL: insertSession, Args: sessionArgs})
	for _, k := range kernels {
		args, err := codec.KernelArgs(s.reg, k, sess.CreatedAt, ts)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, Stmt{SQL: insertKernel, Args: args})
	}
	for _, d := range sess.DependsOn {
		stmts = append(stmts, Stmt{SQL: insertDependency, Args: []any{string(sess.ID), string(d)}})
	}
	return stmts, nil
}

// checkName refuses a name that a live session or a live array of the
// same owner has: the two share one namespace, so a name stands for one
// thing in every verb. The name's lock (taken before any limit's, so locks are always taken in
// one order) makes two creations of one name queue, so the second sees
// the first's session; the partial unique index of migration 00032 is the
// backstop should a caller get around it.
func (s *Store) checkName(ctx context.Context, tx txn, user, name string) error {
	if name == "" {
		return nil
	}
	return s.checkNameFree(ctx, tx, "session", countLiveNamedOrArray, user, name, store.ErrNameTaken)
}

// checkGroupAdmits refuses a session whose group no longer admits new
// ones. The shared lock keeps the group's row as read until this
// transaction commits: a change of state waits for the creation, or the
// creation, waiting for the change, reads the new state. Either way no
// session is stored after a change to DRAINING commits. Creations share
// the lock, so they do not queue behind each other; it is taken last, so
// it is held only for the inserts. A group that does not exist is left to
// the foreign key, which reports it as ErrNotFound.
func (s *Store) checkGroupAdmits(ctx context.Context, tx txn, group string) error {
	var name string
	found := false
	err := tx.query(ctx, selectGroupStateShared, []any{group}, func(sc codec.Scanner) error {
		found = true
		return sc.Scan(&name)
	})
	if err != nil || !found {
		return err
	}
	// A removed group reads as REMOVED (see groupState).
	st, err := domain.ParseGroupState(name)
	if err != nil {
		return &store.CorruptRowError{Table: "resource_groups", ID: group, Column: "state", Err: err}
	}
	if !st.Admits() {
		return &store.GroupClosedError{Group: group, State: st}
	}
	return nil
}

// countPending is the count of each scope's limit.
var countPending = map[domain.PolicyScope]string{
	domain.ScopeUser:    countPendingOfUser,
	domain.ScopeProject: countPendingOfProject,
	domain.ScopeDomain:  countPendingOfDomain,
}

// lockOrder checks limits and sorts them by scope, then name: every
// creation takes the locks of its limits in this one order, so two never
// wait for each other in a circle.
func lockOrder(limits []store.PendingLimit) ([]store.PendingLimit, error) {
	rank := map[domain.PolicyScope]int{domain.ScopeUser: 0, domain.ScopeProject: 1, domain.ScopeDomain: 2}
	for _, l := range limits {
		if _, ok := rank[l.Scope]; !ok || l.Name == "" || l.Max < 1 {
			return nil, fmt.Errorf("%w: pending limit %+v: want a scope, a name and a maximum of at least 1",
				store.ErrInvalid, l)
		}
	}
	limits = slices.Clone(limits)
	slices.SortFunc(limits, func(a, b store.PendingLimit) int {
		return cmp.Or(cmp.Compare(rank[a.Scope], rank[b.Scope]), cmp.Compare(a.Name, b.Name))
	})
	return limits, nil
}

// checkLimits counts, under each limit's lock, the sessions it caps, and
// refuses when adding more would take one past its maximum. The lock is held until the transaction
// ends, so the next creation under the same limit counts after this one's
// session is committed (or rolled back); PostgreSQL's READ COMMITTED gives
// each count a snapshot taken after its lock was granted.
func (s *Store) checkLimits(ctx context.Context, tx txn, limits []store.PendingLimit, adding int) error {
	if len(limits) == 0 {
		return nil
	}
	locker, _ := s.eng.(KeyLocker)
	counts := make([]int64, len(limits))
	stmts := make([]Stmt, 0, 2*len(limits))
	for i, l := range limits {
		if locker != nil {
			stmts = append(stmts, locker.KeyLock("pending "+string(l.Scope)+" "+l.Name))
		}
		stmts = append(stmts, Stmt{SQL: countPending[l.Scope], Args: []any{l.Name, int64(l.Max)},
			Row: func(sc codec.Scanner) error { return sc.Scan(&counts[i]) }})
	}
	if err := tx.batch(ctx, stmts...); err != nil {
		return err
	}
	for i, l := range limits {
		if counts[i]+int64(adding) > int64(l.Max) {
			return &store.LimitError{Limit: l, Pending: int(counts[i])}
		}
	}
	return nil
}

// scanKernel reads one kernel row against the store's slot registry.
func (s *Store) scanKernel(sc codec.Scanner) (domain.Kernel, error) {
	return codec.ScanKernel(s.reg, sc)
}

// GetSession returns a session with its kernels in cluster index order.
func (s *Store) GetSession(ctx context.Context, id domain.SessionID) (store.SessionWithKernels, error) {
	var out store.SessionWithKernels
	err := s.read(ctx, "get session "+string(id), func(tx txn) error {
		var err error
		out.Session, err = codec.ScanSessionSpec(s.reg, tx.queryRow(ctx, selectSession, string(id)))
		if err != nil {
			return err
		}
		deps, err := dependencies(ctx, tx, []string{string(id)})
		if err != nil {
			return err
		}
		out.Session.DependsOn = deps[id]
		out.Kernels, err = queryAll(ctx, tx, selectSessionKernels, []any{string(id)}, s.scanKernel)
		return err
	})
	return out, err
}

// ListSessions returns the sessions the filter selects, oldest first or
// newest first.
func (s *Store) ListSessions(ctx context.Context, f store.SessionFilter) ([]domain.Session, error) {
	var out []domain.Session
	types := make([]string, len(f.Types))
	for i, t := range f.Types {
		types[i] = string(t)
	}
	// A time that is unset filters nothing: every session ended after 0.
	var endedSince any = ts(f.EndedSince)
	if f.EndedSince.IsZero() {
		endedSince = ts(time.Unix(0, 0))
	}
	driver, order := "", sessionsOldest
	switch {
	case len(f.IDs) > 0:
		driver = sessionsDrivenByID
	case len(f.Statuses) > 0:
		driver = sessionsDrivenByStatus
	}
	if f.Newest {
		order = sessionsNewest
	}
	query := selectSessionsFrom + driver + order
	err := s.read(ctx, "list sessions", func(tx txn) error {
		args := []any{List(codec.StatusNames(f.Statuses)), f.User, f.Project, f.Domain, f.Group, limit(f.Limit),
			List(codec.Strings(f.IDs)), string(f.After), f.Name, f.IDPrefix, List(types), endedSince}
		var ids []string
		err := tx.query(ctx, query, args, func(sc codec.Scanner) error {
			sess, err := codec.ScanSession(s.reg, sc)
			out = append(out, sess)
			ids = append(ids, string(sess.ID))
			return err
		})
		if err != nil {
			return err
		}
		deps, err := dependencies(ctx, tx, ids)
		if err != nil {
			return err
		}
		for i := range out {
			out[i].DependsOn = deps[out[i].ID]
		}
		return nil
	})
	return out, err
}

// SessionSpecs returns the command and environment of the sessions of
// ids that exist, in one query.
func (s *Store) SessionSpecs(ctx context.Context, ids []domain.SessionID) (map[domain.SessionID]store.SessionSpec, error) {
	out := make(map[domain.SessionID]store.SessionSpec, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	err := s.read(ctx, "read session specs", func(tx txn) error {
		return tx.query(ctx, selectSpecs, []any{List(codec.Strings(ids))}, func(sc codec.Scanner) error {
			id, spec, err := codec.ScanSpec(sc)
			out[id] = spec
			return err
		})
	})
	return out, err
}

func dependencies(ctx context.Context, tx txn, ids []string) (map[domain.SessionID][]domain.SessionID, error) {
	deps := make(map[domain.SessionID][]domain.SessionID)
	err := tx.query(ctx, selectDependencies, []any{List(ids)}, func(sc codec.Scanner) error {
		var from, to string
		if err := sc.Scan(&from, &to); err != nil {
			return err
		}
		deps[domain.SessionID(from)] = append(deps[domain.SessionID(from)], domain.SessionID(to))
		return nil
	})
	return deps, err
}

// ListKernels returns the kernels the filter selects.
func (s *Store) ListKernels(ctx context.Context, f store.KernelFilter) ([]domain.Kernel, error) {
	args := []any{List(codec.Strings(f.Sessions)), List(codec.Strings(f.Agents)),
		List(codec.StatusNames(f.Statuses)), List(codec.Strings(f.IDs))}
	q := selectKernels
	switch {
	case len(f.IDs) > 0:
		q = selectKernelsByID
	case len(f.Sessions) > 0:
		q = selectKernelsBySession
	case len(f.Agents) > 0:
		q = selectKernelsByAgent
	case len(f.Statuses) > 0:
		q = selectKernelsByStatus
	}
	return readAll(ctx, s, "list kernels", q, args, s.scanKernel)
}

// AvoidAgents adds agents to the session's avoid list, under the session's
// lock so concurrent additions are all kept.
func (s *Store) AvoidAgents(ctx context.Context, id domain.SessionID, agents []domain.AgentID) error {
	return s.write(ctx, "avoid agents for session "+string(id), func(tx txn) error {
		var stored string
		if err := tx.queryRow(ctx, lockAvoidAgents, string(id)).Scan(&stored); err != nil {
			return err
		}
		list, changed, err := codec.AddAvoided("sessions", string(id), stored, agents)
		if err != nil || !changed {
			return err
		}
		_, err = tx.exec(ctx, updateAvoidAgents, list, string(id))
		return err
	})
}
