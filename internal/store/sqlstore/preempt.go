package sqlstore

import (
	"context"
	"crypto/sha1"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

const (
	// lockVictims is the guard of a preemption: the victim is still
	// RUNNING in the plan's group, as the scheduler read it.
	lockVictims = `SELECT id FROM sessions WHERE id {in $1} AND status = 'RUNNING' AND resource_group = $2
ORDER BY id {lock}`
	lockPreemptors = `SELECT id FROM sessions WHERE id {in $1} AND status = 'PENDING' AND resource_group = $2
ORDER BY id {lock}`
	markPreempted    = `UPDATE sessions SET outcome = 'failure', preempted_by = $1 WHERE id = $2`
	insertPreemption = `INSERT INTO preemptions (victim, preemptor, resource_group, at, work_lost_ns, requeued_as)
VALUES ($1, $2, $3, $4, $5, $6)`
	prunePreemptions       = `DELETE FROM preemptions WHERE at < $1`
	selectPreemptionsSince = `SELECT victim, preemptor, at FROM preemptions
WHERE resource_group = $1 AND at >= $2 ORDER BY at, victim`
)

// applyPreemptions moves the plan's victims that are still RUNNING, for
// preemptors still PENDING, to TERMINATING with reason "preempted by
// <id>" and outcome preempted, records each, and submits a new PENDING
// attempt of each victim that asked to be requeued, all in the plan's
// transaction: a crash leaves either all of it or none. Their kernels are
// left to TerminateSessions, which releases their slots once they are
// gone; the preemptor is placed by a later round from those slots.
func (s *Store) applyPreemptions(ctx context.Context, tx txn, plan framework.Plan, now time.Time) ([]store.Preempted, error) {
	if len(plan.Preemptions) == 0 {
		return nil, nil
	}
	victims := make([]string, len(plan.Preemptions))
	preemptors := make([]string, 0, len(plan.Preemptions))
	for i, p := range plan.Preemptions {
		victims[i] = string(p.Victim)
		preemptors = append(preemptors, string(p.Preemptor))
	}
	live := map[string]bool{}
	waiting := map[string]bool{}
	err := tx.batch(ctx,
		Stmt{SQL: lockPreemptors, Args: []any{List(preemptors), plan.Group}, Row: func(sc codec.Scanner) error {
			var id string
			err := sc.Scan(&id)
			waiting[id] = true
			return err
		}},
		Stmt{SQL: lockVictims, Args: []any{List(victims), plan.Group}, Row: func(sc codec.Scanner) error {
			var id string
			err := sc.Scan(&id)
			live[id] = true
			return err
		}},
	)
	if err != nil {
		return nil, err
	}
	var out []store.Preempted
	for _, p := range plan.Preemptions {
		if !live[string(p.Victim)] || !waiting[string(p.Preemptor)] {
			continue
		}
		live[string(p.Victim)] = false
		if _, err := tx.exec(ctx, moveSessions, domain.SessionTerminating.String(), p.Reason, ts(now),
			List{string(p.Victim)}); err != nil {
			return nil, err
		}
		if err := tx.execOne(ctx, markPreempted, string(p.Preemptor), string(p.Victim)); err != nil {
			return nil, err
		}
		requeued, err := s.requeue(ctx, tx, p, now)
		if err != nil {
			return nil, err
		}
		if _, err := tx.exec(ctx, insertPreemption, string(p.Victim), string(p.Preemptor), plan.Group, ts(now),
			int64(p.WorkLost), string(requeued)); err != nil {
			return nil, err
		}
		out = append(out, store.Preempted{Victim: p.Victim, Preemptor: p.Preemptor, Requeued: requeued, WorkLost: p.WorkLost})
	}
	return out, nil
}

// requeue submits a new PENDING attempt of a preempted victim that asked
// for one: the same spec and kernels under an id of its own (requeueID),
// linked to the victim by requeued_from, without the victim's
// dependencies (they were met when it started) or job (its gang is gone),
// named "<name>.r" when that name is free.
func (s *Store) requeue(ctx context.Context, tx txn, p framework.Preemption, now time.Time) (domain.SessionID, error) {
	sess, err := codec.ScanSessionSpec(s.reg, tx.queryRow(ctx, selectSession, string(p.Victim)))
	if err != nil || !sess.Requeue {
		return "", err
	}
	kernels, err := queryAll(ctx, tx, selectSessionKernels, []any{string(p.Victim)}, s.scanKernel)
	if err != nil {
		return "", err
	}
	clone := sess
	clone.ID, clone.RequeuedFrom = requeueID(sess.ID), sess.ID
	clone.Status, clone.StatusReason = domain.SessionPending, "requeued from "+string(sess.ID)+": "+domain.PreemptedReason(p.Preemptor)
	clone.CreatedAt, clone.StatusChangedAt = now, now
	clone.Outcome, clone.PreemptedBy, clone.Job, clone.DependsOn, clone.AvoidAgents = 0, "", "", nil, nil
	if sess.Name != "" {
		clone.Name = sess.Name + ".r"
		var n int64
		if err := tx.queryRow(ctx, countLiveNamed, sess.Owner.User, clone.Name).Scan(&n); err != nil {
			return "", err
		}
		if n > 0 {
			clone.Name = ""
		}
	}
	fresh := make([]domain.Kernel, len(kernels))
	for i, k := range kernels {
		fresh[i] = domain.Kernel{ID: domain.KernelIDOf(clone.ID, i), SessionID: clone.ID,
			ClusterRole: k.ClusterRole, ClusterIdx: k.ClusterIdx, Image: k.Image, Architecture: k.Architecture,
			Requested: k.Requested}
	}
	if fresh, err = codec.NewSession(clone, fresh); err != nil {
		return "", err
	}
	args, err := codec.SessionArgs(s.reg, clone, ts)
	if err != nil {
		return "", err
	}
	stmts := []Stmt{{SQL: insertSession, Args: args}}
	for _, k := range fresh {
		kargs, err := codec.KernelArgs(s.reg, k, now, ts)
		if err != nil {
			return "", err
		}
		stmts = append(stmts, Stmt{SQL: insertKernel, Args: kargs})
	}
	return clone.ID, tx.batch(ctx, stmts...)
}

// requeueID is the id of a victim's new attempt: a UUID (version 5, SHA-1
// of the victim's id), so it shares no prefix with the victim's and an id
// prefix names one session, as with any submitted session. It is derived
// rather than random so that replaying the same decisions (the simulator,
// whose pending sessions tie on their creation time and are then ordered
// by id) gives the same ids; a session is preempted at most once, so the
// id is new.
func requeueID(victim domain.SessionID) domain.SessionID {
	h := sha1.New()
	h.Write(requeueNamespace[:])
	h.Write([]byte(victim))
	var b [16]byte
	copy(b[:], h.Sum(nil))
	b[6] = b[6]&0x0f | 0x50 // version 5
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return domain.SessionID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

// requeueNamespace is the UUID namespace of requeued attempts' ids, a
// random one drawn for this use alone.
var requeueNamespace = [16]byte{0x2e, 0xd6, 0xf0, 0xa7, 0x36, 0x27, 0x4d, 0x05, 0x84, 0xc2, 0x0f, 0xf7, 0x24, 0x5b, 0x17, 0x98}

// preemptionsSince reads the group's preemptions from since on, which the
// scheduler's budget and no-cycle rule count.
func (s *Store) preemptionsSince(ctx context.Context, tx txn, group string, since time.Time) ([]framework.PreemptionRecord, error) {
	return queryAll(ctx, tx, selectPreemptionsSince, []any{group, ts(since)}, codec.ScanPreemption)
}

// PrunePreemptions deletes the preemption records made before before.
func (s *Store) PrunePreemptions(ctx context.Context, before time.Time) (int64, error) {
	return s.deleteBefore(ctx, "prune preemptions", prunePreemptions, before)
}
