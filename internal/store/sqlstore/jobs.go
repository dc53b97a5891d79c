package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

const (
	jobColumns = `id, name, owner_user, owner_project, owner_domain, min_available, permit_timeout_ns,
		failure_policy, state, state_reason, state_changed_ns, created_ns`
	insertJob = `INSERT INTO jobs (` + jobColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`
	selectJob  = `SELECT ` + jobColumns + ` FROM jobs WHERE id = $1`
	selectJobs = `SELECT ` + jobColumns + ` FROM jobs
WHERE ($1 = '' OR owner_user = $1) AND ($2 = 0 OR state NOT IN ('EXPIRED', 'FAILED', 'REJECTED'))
ORDER BY created_ns, id`
	selectJobMembers = `SELECT ` + codec.SessionColumns + ` FROM sessions WHERE job_id = $1 ORDER BY created_at, id`
	// The members of every live job, in one scan; the job filter is
	// selectJobs' live clause.
	selectLiveJobMembers = `SELECT ` + codec.SessionColumns + ` FROM sessions
WHERE job_id IN (SELECT id FROM jobs WHERE state NOT IN ('EXPIRED', 'FAILED', 'REJECTED'))
ORDER BY created_at, id`
	moveJob          = `UPDATE jobs SET state = $1, state_reason = $2, state_changed_ns = $3 WHERE id = $4 AND state = $5`
	insertJobHistory = `INSERT INTO job_history (job_id, at_ns, event, from_state, to_state, message)
VALUES ($1, $2, $3, $4, $5, $6)`
	selectJobHistory = `SELECT job_id, at_ns, event, from_state, to_state, message FROM job_history
WHERE job_id = $1 ORDER BY id`
	// What the scheduler needs of each job with a PENDING member in the
	// group: its gang size, how many members are live (submitted and not
	// ended) and how many hold a placement that has not begun to end.
	selectGroupJobs = `SELECT j.id, j.min_available,
  (SELECT count(*) FROM sessions m WHERE m.job_id = j.id
     AND m.status IN ('PENDING', 'SCHEDULED', 'PREPARING', 'PREPARED', 'CREATING', 'RUNNING')),
  (SELECT count(*) FROM sessions m WHERE m.job_id = j.id
     AND m.status IN ('SCHEDULED', 'PREPARING', 'PREPARED', 'CREATING', 'RUNNING'))
FROM jobs j
WHERE EXISTS (SELECT 1 FROM sessions p WHERE p.job_id = j.id AND p.status = 'PENDING' AND p.resource_group = $1)`
)

func scanJob(sc codec.Scanner) (domain.Job, error) {
	var (
		j                        domain.Job
		id, policy, state        string
		permit, changed, created int64
	)
	if err := sc.Scan(&id, &j.Name, &j.Owner.User, &j.Owner.Project, &j.Owner.Domain, &j.MinAvailable, &permit,
		&policy, &state, &j.StateReason, &changed, &created); err != nil {
		return j, err
	}
	j.ID = domain.JobID(id)
	j.PermitTimeout = time.Duration(permit)
	j.FailurePolicy = domain.FailurePolicy(policy)
	st, err := domain.ParseJobState(state)
	if err != nil {
		return j, codec.Corrupt("jobs", id, "state", err)
	}
	j.State = st
	j.StateChangedAt, j.CreatedAt = fromNanos(changed), fromNanos(created)
	return j, nil
}

// CreateJob implements store.Store.
func (s *Store) CreateJob(ctx context.Context, j domain.Job) error {
	if j.MinAvailable < 1 || j.PermitTimeout < 0 || j.State == 0 {
		return fmt.Errorf("%w: job needs min_available ≥ 1, a permit timeout ≥ 0 and a state", store.ErrInvalid)
	}
	return s.write(ctx, "create job "+string(j.ID), func(tx txn) error {
		_, err := tx.exec(ctx, insertJob, string(j.ID), j.Name, j.Owner.User, j.Owner.Project, j.Owner.Domain,
			j.MinAvailable, int64(j.PermitTimeout), string(j.FailurePolicy), j.State.String(), j.StateReason,
			unixNanos(j.StateChangedAt), unixNanos(j.CreatedAt))
		return err
	})
}

// GetJob implements store.Store.
func (s *Store) GetJob(ctx context.Context, id domain.JobID) (domain.Job, error) {
	var j domain.Job
	err := s.read(ctx, "get job "+string(id), func(tx txn) error {
		var err error
		j, err = s.getJobTx(ctx, tx, id)
		return err
	})
	return j, err
}

// ListJobs implements store.Store.
func (s *Store) ListJobs(ctx context.Context, f store.JobFilter) ([]domain.Job, error) {
	live := 0
	if f.Live {
		live = 1
	}
	return readAll(ctx, s, "list jobs", selectJobs, []any{f.User, live}, scanJob)
}

// JobMembers implements store.Store.
func (s *Store) JobMembers(ctx context.Context, id domain.JobID) ([]domain.Session, error) {
	return readAll(ctx, s, "members of job "+string(id), selectJobMembers, []any{string(id)},
		func(sc codec.Scanner) (domain.Session, error) { return codec.ScanSession(s.reg, sc) })
}

// LiveJobs implements store.Store.
func (s *Store) LiveJobs(ctx context.Context) ([]store.JobWithMembers, error) {
	var out []store.JobWithMembers
	err := s.read(ctx, "live jobs with members", func(tx txn) error {
		out = nil
		at := map[domain.JobID]int{}
		if err := tx.query(ctx, selectJobs, []any{"", 1}, func(sc codec.Scanner) error {
			j, err := scanJob(sc)
			at[j.ID] = len(out)
			out = append(out, store.JobWithMembers{Job: j})
			return err
		}); err != nil {
			return err
		}
		return tx.query(ctx, selectLiveJobMembers, nil, func(sc codec.Scanner) error {
			sess, err := codec.ScanSession(s.reg, sc)
			if err != nil {
				return err
			}
			// A job that went final between the two reads is not in
			// out: its members are dropped with it.
			if i, ok := at[sess.Job]; ok {
				out[i].Members = append(out[i].Members, sess)
			}
			return nil
		})
	})
	return out, err
}

// MoveJob implements store.Store.
func (s *Store) MoveJob(ctx context.Context, e domain.JobHistoryEntry) error {
	return s.write(ctx, "move job "+string(e.Subject), func(tx txn) error {
		n, err := tx.exec(ctx, moveJob, e.To.String(), e.Message, unixNanos(e.At), string(e.Subject), e.From.String())
		if err != nil {
			return err
		}
		if n == 0 {
			if _, err := s.getJobTx(ctx, tx, e.Subject); err != nil {
				return err
			}
			return fmt.Errorf("%w: job %s is no longer %s", store.ErrGuardFailed, e.Subject, e.From)
		}
		_, err = tx.exec(ctx, insertJobHistory, string(e.Subject), unixNanos(e.At), string(e.Cause), e.From.String(),
			e.To.String(), e.Message)
		return err
	})
}

func (s *Store) getJobTx(ctx context.Context, tx txn, id domain.JobID) (domain.Job, error) {
	var j domain.Job
	found := false
	err := tx.query(ctx, selectJob, []any{string(id)}, func(sc codec.Scanner) error {
		var err error
		j, err = scanJob(sc)
		found = true
		return err
	})
	if err == nil && !found {
		err = store.ErrNotFound
	}
	return j, err
}

// JobHistory implements store.Store.
func (s *Store) JobHistory(ctx context.Context, id domain.JobID) ([]domain.JobHistoryEntry, error) {
	return readAll(ctx, s, "history of job "+string(id), selectJobHistory, []any{string(id)}, scanJobHistory)
}

func scanJobHistory(sc codec.Scanner) (domain.JobHistoryEntry, error) {
	var (
		e             domain.JobHistoryEntry
		job, from, to string
		ev            string
		at            int64
	)
	if err := sc.Scan(&job, &at, &ev, &from, &to, &e.Message); err != nil {
		return e, err
	}
	e.Subject, e.At, e.Cause = domain.JobID(job), fromNanos(at), domain.JobEvent(ev)
	var err error
	if e.From, err = domain.ParseJobState(from); err != nil {
		return e, codec.Corrupt("job_history", job, "from_state", err)
	}
	if e.To, err = domain.ParseJobState(to); err != nil {
		return e, codec.Corrupt("job_history", job, "to_state", err)
	}
	return e, nil
}

// groupJobsStmt reads the gang facts of the group's jobs into snap.Jobs;
// LoadSnapshot runs it in its batch.
func groupJobsStmt(group string, snap *framework.Snapshot) Stmt {
	return Stmt{SQL: selectGroupJobs, Args: []any{group}, Row: func(sc codec.Scanner) error {
		var id string
		var j framework.JobInfo
		if err := sc.Scan(&id, &j.MinAvailable, &j.Live, &j.Placed); err != nil {
			return err
		}
		if snap.Jobs == nil {
			snap.Jobs = map[domain.JobID]framework.JobInfo{}
		}
		snap.Jobs[domain.JobID(id)] = j
		return nil
	}}
}
