package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// maxMinAvailable bounds a gang; a larger one could never be placed whole
// in any cluster we schedule.
const maxMinAvailable = 10_000

func (s *Server) createJob(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	var req v1.CreateJobRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	j, e := s.newJob(caller(ctx), req)
	if e != nil {
		return e
	}
	if err := s.store.CreateJob(ctx, j); err != nil {
		return err
	}
	out, err := s.jobOut(ctx, j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// newJob checks a job request and makes the job it asks for, NEW, without
// storing it (POST /v1/jobs and apply).
func (s *Server) newJob(u store.User, req v1.CreateJobRequest) (domain.Job, *apiError) {
	if e := cleanText("name", req.Name, maxNameLen); e != nil {
		return domain.Job{}, e
	}
	now := s.clock.Now().UTC().Truncate(time.Microsecond)
	j := domain.Job{ID: domain.JobID(newUUID()), Name: req.Name,
		Owner:        domain.Owner{User: u.Name, Project: u.Project, Domain: u.Domain},
		MinAvailable: 1, PermitTimeout: domain.DefaultPermitTimeout, FailurePolicy: domain.FailureWait,
		State: domain.JobNew, StateChangedAt: now, CreatedAt: now}
	if req.MinAvailable != nil {
		if n := *req.MinAvailable; n < 1 || n > maxMinAvailable {
			return j, invalid("min_available", "must be 1 to %d, not %d", maxMinAvailable, n)
		}
		j.MinAvailable = *req.MinAvailable
	}
	if req.PermitTimeout != "" {
		d, err := time.ParseDuration(req.PermitTimeout)
		if err != nil || d <= 0 || d > 24*time.Hour {
			return j, invalid("permit_timeout", "must be a duration from 1ns to 24h such as \"60s\"")
		}
		j.PermitTimeout = d
	}
	if req.FailurePolicy != "" {
		p, err := domain.ParseFailurePolicy(req.FailurePolicy)
		if err != nil {
			return j, invalid("failure_policy", "%v", err)
		}
		j.FailurePolicy = p
	}
	return j, nil
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	u := caller(r.Context())
	f := store.JobFilter{User: u.Name}
	if isAdmin(u) {
		f.User = ""
	}
	jobs, err := s.store.ListJobs(r.Context(), f)
	if err != nil {
		return err
	}
	out := v1.List[v1.Job]{Items: make([]v1.Job, 0, len(jobs))}
	for _, j := range jobs {
		o, err := s.jobOut(r.Context(), j)
		if err != nil {
			return err
		}
		out.Items = append(out.Items, o)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) error {
	j, err := s.resolveJob(r.Context(), caller(r.Context()), r.PathValue("id"))
	if err != nil {
		return err
	}
	out, err := s.jobOut(r.Context(), j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteJob cancels a job: it fails (seed 003's Fail event) with the
// reason "cancelled", and every live member is ended at once; the
// coordinator moves it to FAILED once none is left.
func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := caller(ctx)
	j, err := s.resolveJob(ctx, u, r.PathValue("id"))
	if err != nil {
		return err
	}
	if j.State != domain.JobFailing {
		to, err := domain.NextJobState(domain.JobFail, j.State)
		if err != nil {
			return conflict("job %s is %s and can no longer be cancelled", j.ID, j.State)
		}
		why := "cancelled by " + u.Name
		e := domain.JobHistoryEntry{Subject: j.ID, At: s.clock.Now(), Cause: domain.JobFail, From: j.State, To: to, Message: why}
		if err := s.store.MoveJob(ctx, e); err != nil {
			if errors.Is(err, store.ErrGuardFailed) {
				return conflict("job %s changed state meanwhile; try again", j.ID)
			}
			return err
		}
		j.State, j.StateReason = to, why
	}
	members, err := s.store.JobMembers(ctx, j.ID)
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.Status.Terminal() {
			continue
		}
		if _, err := s.sessions.Terminate(ctx, m.ID, fmt.Sprintf("job %s cancelled", j.ID), false); err != nil &&
			!errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	j, err = s.store.GetJob(ctx, j.ID)
	if err != nil {
		return err
	}
	out, err := s.jobOut(ctx, j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, out)
	return nil
}

// resolveJob finds one of the caller's jobs (any job for an admin) by id
// or by name; another user's job is not found.
func (s *Server) resolveJob(ctx context.Context, u store.User, ref string) (domain.Job, error) {
	if ref == "" || len(ref) > 256 {
		return domain.Job{}, notFound("no job %q", ref)
	}
	j, err := s.store.GetJob(ctx, domain.JobID(ref))
	if err == nil && (isAdmin(u) || j.Owner.User == u.Name) {
		return j, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return domain.Job{}, err
	}
	// A name means the live job of that name, or else the newest ended one,
	// so a job can still be shown after it has ended.
	jobs, err := s.store.ListJobs(ctx, store.JobFilter{User: u.Name})
	if err != nil {
		return domain.Job{}, err
	}
	var live []domain.Job
	var ended *domain.Job
	for i, j := range jobs {
		if j.Name != ref {
			continue
		}
		if j.State.Final() {
			ended = &jobs[i] // oldest first, so the last is the newest
			continue
		}
		live = append(live, j)
	}
	switch {
	case len(live) == 1:
		return live[0], nil
	case len(live) > 1:
		return domain.Job{}, conflict("%d live jobs are named %q; use the job's id", len(live), ref)
	case ended != nil:
		return *ended, nil
	}
	return domain.Job{}, notFound("no job %q", ref)
}

// sessionJob resolves the job a new session joins ("" for none) and
// checks that it still takes members.
func (s *Server) sessionJob(ctx context.Context, u store.User, ref string) (domain.Job, error) {
	if ref == "" {
		return domain.Job{}, nil
	}
	j, err := s.resolveJob(ctx, u, ref)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return domain.Job{}, invalid("job", "no job %q", ref)
	}
	if err != nil {
		return domain.Job{}, err
	}
	if !j.State.Admits() {
		e := conflict("job %s is %s and takes no new members", j.ID, j.State)
		e.Field = "job"
		return domain.Job{}, e
	}
	return j, nil
}

// rejectJob records seed 003's Reject when the first member of a NEW job
// is refused at admission, and returns the refusal unchanged.
func (s *Server) rejectJob(ctx context.Context, j domain.Job, refusal error) error {
	var ae *apiError
	// A 429 (the owner's pending cap) refuses the member for now, not the
	// job: Rejected is final, and the member may come again once there
	// is room. Server errors say nothing of the job either.
	if j.ID == "" || j.State != domain.JobNew || !errors.As(refusal, &ae) || ae.Status >= 500 ||
		ae.Status == http.StatusTooManyRequests {
		return refusal
	}
	e := domain.JobHistoryEntry{Subject: j.ID, At: s.clock.Now(), Cause: domain.JobReject, From: domain.JobNew,
		To: domain.JobRejected, Message: "first member refused: " + ae.Message}
	if err := s.store.MoveJob(ctx, e); err != nil && !errors.Is(err, store.ErrGuardFailed) {
		s.log.Warn("reject job", "job", j.ID, "err", err)
	}
	return refusal
}

func (s *Server) jobOut(ctx context.Context, j domain.Job) (v1.Job, error) {
	members, err := s.store.JobMembers(ctx, j.ID)
	if err != nil {
		return v1.Job{}, err
	}
	hist, err := s.store.JobHistory(ctx, j.ID)
	if err != nil {
		return v1.Job{}, err
	}
	out := v1.Job{ID: string(j.ID), Name: j.Name, Owner: j.Owner.User, MinAvailable: j.MinAvailable,
		PermitTimeout: formatDuration(j.PermitTimeout), FailurePolicy: string(j.FailurePolicy), State: j.State.String(),
		StateReason: j.StateReason, StateChangedAt: j.StateChangedAt.UTC(), CreatedAt: j.CreatedAt.UTC(),
		Members: make([]v1.JobMember, 0, len(members)), History: make([]v1.JobHistory, 0, len(hist))}
	for _, m := range members {
		out.Members = append(out.Members, v1.JobMember{ID: string(m.ID), Name: m.Name, Status: m.Status.String()})
		if !m.Status.Terminal() {
			out.Submitted++
		}
		if m.Status.HoldsResources() && m.Status != domain.SessionTerminating {
			out.Placed++
		}
	}
	for _, e := range hist {
		out.History = append(out.History, v1.JobHistory{At: e.At.UTC(), Event: string(e.Cause), From: e.From.String(),
			To: e.To.String(), Message: e.Message})
	}
	return out, nil
}

// checkJobGroup keeps a job's members in one resource group: a round
// places one group's sessions, so a gang split over groups could never be
// placed whole.
func (s *Server) checkJobGroup(ctx context.Context, j domain.Job, group string) error {
	if j.ID == "" {
		return nil
	}
	members, err := s.store.JobMembers(ctx, j.ID)
	if err != nil {
		return err
	}
	for _, m := range members {
		if !m.Status.Terminal() && m.ResourceGroup != group {
			return invalid("resource_group", "job %s's members run in resource group %s; a gang cannot span groups",
				j.ID, m.ResourceGroup)
		}
	}
	return nil
}
