package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/admit"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Limits on names and lists the API checks itself (deployments', jobs'
// and event streams'); a session request's are admission's.
const (
	maxNameLen   = 128
	maxListItems = 64
)

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := caller(ctx)
	var req v1.CreateSessionRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Array != "" {
		return invalid("array", "an array is submitted with POST /v1/arrays")
	}
	job, err := s.sessionJob(ctx, u, req.Job)
	if err != nil {
		return err
	}
	sess, kernels, err := s.buildSession(ctx, u, req)
	if err != nil {
		return s.rejectJob(ctx, job, err)
	}
	sess.Job = job.ID
	if sess.Job != "" {
		// Evicting one member would break the job's gang, which preemption
		// does not model: members are never victims.
		if req.Preemptible != nil && *req.Preemptible {
			return s.rejectJob(ctx, job, invalid("preemptible", "a job's member cannot be preempted: it would break the job's gang"))
		}
		sess.Preemptible = false
	}
	if e := s.checkJobGroup(ctx, job, sess.ResourceGroup); e != nil {
		return s.rejectJob(ctx, job, e)
	}
	if err := s.submit(ctx, sess, kernels); err != nil {
		// A name already taken is the user's to fix; it does not refuse
		// the job.
		if ae := (*apiError)(nil); errors.As(err, &ae) && ae.Field == "name" {
			return err
		}
		return s.rejectJob(ctx, job, err)
	}
	created, err := s.store.GetSession(ctx, sess.ID)
	if err != nil {
		// Stored; answer with what was stored rather than fail the submit.
		created = store.SessionWithKernels{Session: sess, Kernels: kernels}
	}
	w.Header().Set("Location", "/v1/sessions/"+string(sess.ID))
	writeJSON(w, http.StatusCreated, s.sessionOut(created))
	return nil
}

// submit stores a session buildSession made, under its owner's limits,
// and asks for a scheduling round (admit.Admitter.Submit).
func (s *Server) submit(ctx context.Context, sess domain.Session, kernels []domain.Kernel) error {
	return fromAdmit(s.admit.Submit(ctx, sess, kernels))
}

// buildSession validates a user's request completely and turns it into
// the records to store (admit.Admitter.Build). It reads but never writes.
func (s *Server) buildSession(ctx context.Context, u store.User, req v1.CreateSessionRequest) (domain.Session, []domain.Kernel, error) {
	return s.build(ctx, s.admitRequest(u, req))
}

// admitRequest is the admission request a user's session request makes,
// with a new id.
func (s *Server) admitRequest(u store.User, req v1.CreateSessionRequest) admit.Request {
	return admit.Request{ID: domain.SessionID(newUUID()), Owner: ownerOf(u), Name: req.Name, Type: req.Type,
		Image: req.Image, Architecture: req.Architecture, Resources: req.Resources, ClusterMode: req.ClusterMode,
		ClusterSize: req.ClusterSize, Priority: req.Priority, ResourceGroup: req.ResourceGroup, DependsOn: req.DependsOn,
		Resolve: s.dependency, StartsAt: req.StartsAt, TimeLimit: req.TimeLimit, Preemptible: req.Preemptible,
		Requeue: req.Requeue, DesignatedAgents: req.DesignatedAgents, DesignatedStrict: req.DesignatedStrict,
		Command: req.Command, Env: req.Env}
}

// build is admission with its refusals in the API's terms.
func (s *Server) build(ctx context.Context, req admit.Request) (domain.Session, []domain.Kernel, error) {
	sess, kernels, err := s.admit.Build(ctx, req)
	return sess, kernels, fromAdmit(err)
}

func ownerOf(u store.User) domain.Owner {
	return domain.Owner{User: u.Name, Project: u.Project, Domain: u.Domain}
}

// dependency resolves a session a request depends on as every verb names
// sessions (see resolve): another user's is refused exactly as a missing
// one is, so the answer does not tell whether it exists.
func (s *Server) dependency(ctx context.Context, ref string) (domain.SessionID, error) {
	sk, err := s.resolve(ctx, ref)
	var e *apiError
	if errors.As(err, &e) {
		// Not found or ambiguous: admission names the field. A name that
		// is an array's says so, rather than that nothing has it.
		if a, aerr := s.resolveArray(ctx, ref); aerr == nil {
			first := 0
			if spec, perr := domain.ParseArraySpec(a.Spec); perr == nil && len(spec.Indexes) > 0 {
				first = spec.Indexes[0]
			}
			return "", &admit.Error{Class: admit.BadRequest, Message: fmt.Sprintf(
				"%q is an array: a session depends on sessions, not on a whole array; name its elements, such as %s",
				ref, domain.ArrayElementName(a.Name, first))}
		}
		return "", &admit.Error{Class: admit.BadRequest, Message: e.Message}
	}
	if err != nil {
		return "", err
	}
	return sk.Session.ID, nil
}

// parseSlots reads a name → quantity map at field. For limits, a slot not
// named is unlimited rather than zero.
func (s *Server) parseSlots(field string, m map[string]string, limits bool) (domain.Vec, *apiError) {
	v, e := admit.ParseSlots(s.slots, field, m, limits)
	if e != nil {
		return nil, admitError(e)
	}
	return v, nil
}

// visibleSession loads the session the path names (by id, id prefix or
// name; see resolve) if the caller may see it. Another user's session is
// answered exactly as a missing one.
func (s *Server) visibleSession(r *http.Request) (store.SessionWithKernels, error) {
	return s.resolve(r.Context(), r.PathValue("id"))
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.sessionOut(sk))
	return nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := caller(ctx)
	q := r.URL.Query()
	f := store.SessionFilter{Limit: defaultListLimit, Group: q.Get("resource_group"), Name: q.Get("name")}
	for _, v := range q["type"] {
		for _, name := range strings.Split(v, ",") {
			t, err := domain.ParseSessionType(strings.TrimSpace(name))
			if err != nil {
				return invalid("type", "%v", err)
			}
			f.Types = append(f.Types, t)
		}
	}
	switch q.Get("order") {
	case "", "oldest":
	case "newest":
		f.Newest = true
	default:
		return invalid("order", "must be oldest or newest, not %q", q.Get("order"))
	}
	if v := q.Get("ended_within"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return invalid("ended_within", "must be a positive duration such as 1h or 90m")
		}
		// The manager's clock, not the client's, decides what is recent.
		f.EndedSince = s.clock.Now().Add(-d)
	}
	for _, v := range q["status"] {
		for _, name := range strings.Split(v, ",") {
			st, err := domain.ParseSessionStatus(strings.ToUpper(strings.TrimSpace(name)))
			if err != nil {
				return invalid("status", "%v", err)
			}
			f.Statuses = append(f.Statuses, st)
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			return invalid("limit", "must be an integer from 1 to %d", maxListLimit)
		}
		f.Limit = n
	}
	if v := q.Get("after"); v != "" {
		if !validID(v) {
			return invalid("after", "must be a session id, as a page's next gives it")
		}
		f.After = domain.SessionID(v)
	}
	f.User = q.Get("owner")
	if !isAdmin(u) {
		if f.User != "" && f.User != u.Name {
			return forbidden("only an admin may list other users' sessions")
		}
		f.User = u.Name
	}
	sessions, err := s.store.ListSessions(ctx, f)
	if err != nil {
		return err
	}
	ids := mapped(sessions, func(ss domain.Session) domain.SessionID { return ss.ID })
	byS := map[domain.SessionID][]domain.Kernel{}
	if len(ids) > 0 {
		kernels, err := s.store.ListKernels(ctx, store.KernelFilter{Sessions: ids})
		if err != nil {
			return err
		}
		for _, k := range kernels {
			byS[k.SessionID] = append(byS[k.SessionID], k)
		}
	}
	out := v1.SessionPage{Items: make([]v1.Session, len(sessions))}
	for i, ss := range sessions {
		out.Items[i] = s.sessionOut(store.SessionWithKernels{Session: ss, Kernels: byS[ss.ID]})
	}
	if len(sessions) == f.Limit {
		// A full page may have more behind it; a short one is the last.
		out.Next = string(sessions[len(sessions)-1].ID)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) sessionHistory(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	entries, err := s.store.History(r.Context(), sk.Session.ID)
	if err != nil {
		return err
	}
	return writeList(w, entries, historyOut)
}

// why answers from a dry run: the scheduler is pure, so running it on a
// fresh snapshot of the group gives the blockers the next round would
// record, including quotas counted against this round's placements.
func (s *Server) why(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	out := v1.Why{Status: sk.Session.Status.String(), Blockers: []v1.Blocker{}}
	if ss := sk.Session; ss.Status.Terminal() {
		out.Ended = &v1.Ended{At: ss.StatusChangedAt.UTC(), Outcome: ss.Outcome.String(), Reason: ss.StatusReason}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	if sk.Session.Status != domain.SessionPending {
		if out.Progress, err = s.progress(r.Context(), sk); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	snap, plan, err := s.dryRun(r.Context(), sk.Session.ResourceGroup)
	if err != nil {
		return err
	}
	owners := make(map[domain.SessionID]string, len(snap.Pending))
	for _, p := range snap.Pending {
		owners[p.Session.ID] = p.Session.Owner.User
	}
	out.FairShare = s.fairShareFactors(&snap)[assocOf(sk.Session)]
	u := caller(r.Context())
	// The plan is shared with other requests: read it, never append to it.
	for pos, d := range slices.Concat(plan.Impossible, plan.Waiting) {
		if d.Session != sk.Session.ID {
			continue
		}
		for _, b := range d.Blockers {
			bo, hidden := s.visibleBlocker(u, owners, b)
			if hidden {
				bo.Message = fmt.Sprintf("queued behind another session, which does not fit yet (head-of-line: block); "+
					"this session is number %d in the queue", pos-len(plan.Impossible)+1)
			}
			out.Blockers = append(out.Blockers, bo)
		}
	}
	// The blockers stand without the estimate; a failed replay only
	// leaves it out.
	if out.EstimatedStart, err = s.estimatedStart(r.Context(), sk.Session.ResourceGroup, sk.Session.ID); err != nil {
		s.log.Warn("estimate start", "session", sk.Session.ID, "err", err)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	force, err := queryBool(r, "force")
	if err != nil {
		return err
	}
	if st := sk.Session.Status; st.Terminal() {
		return conflict("session %s has already ended (%s)", sk.Session.ID, st)
	}
	reason := "terminated by " + caller(r.Context()).Name
	if force {
		reason += " (forced)"
	}
	after, err := s.sessions.Terminate(r.Context(), sk.Session.ID, reason, force)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, s.sessionOut(after))
	return nil
}

func (s *Server) sessionLogs(w http.ResponseWriter, r *http.Request) error {
	sk, err := s.visibleSession(r)
	if err != nil {
		return err
	}
	want := r.URL.Query().Get("kernel")
	var offset int64
	if q := r.URL.Query().Get("offset"); q != "" {
		n, err := strconv.ParseInt(q, 10, 64)
		if err != nil || n < 0 {
			return invalid("offset", "must be a byte count from 0, not %q", q)
		}
		offset = n
	}
	var kernel *domain.Kernel
	for i := range sk.Kernels {
		k := &sk.Kernels[i]
		if want == "" && k.ClusterIdx == 0 || want == string(k.ID) || want == strconv.Itoa(k.ClusterIdx) {
			kernel = k
			break
		}
	}
	if kernel == nil {
		return notFound("session %s has no kernel %q", sk.Session.ID, want)
	}
	if st := sk.Session.Status; kernel.Agent == "" && st.Terminal() {
		// Ended without ever running: there is nothing to fetch anywhere,
		// and "not on an agent yet" would suggest waiting.
		return conflict("session %s ended %s before kernel %s reached an agent, so it never ran and has no logs%s",
			sk.Session.ID, st, kernel.ID, reasonSuffix(sk.Session.StatusReason))
	}
	if s.logs == nil {
		return &apiError{Status: http.StatusNotImplemented, Code: codeNotImplemented, Message: "this manager cannot fetch logs"}
	}
	if kernel.Agent == "" {
		return conflict("kernel %s is not on an agent yet (%s); its logs start once it runs", kernel.ID, kernel.Status)
	}
	if kernel.Status < domain.KernelRunning {
		// Placed but not started: its agent has no log to give yet, and a
		// follower should wait rather than see the agent's failure.
		return conflict("kernel %s has not started yet (%s): it has no output", kernel.ID, kernel.Status)
	}
	s.touch(r.Context(), sk.Session)
	rc, err := s.logs(r.Context(), kernel.Agent, kernel.ID, offset)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound("agent %s has no logs of kernel %s", kernel.Agent, kernel.ID)
		}
		if r.Context().Err() != nil {
			return r.Context().Err()
		}
		s.log.WarnContext(r.Context(), "logs", "agent", kernel.Agent, "kernel", kernel.ID, "err", err)
		return &apiError{Status: http.StatusBadGateway, Code: codeBadGateway,
			Message: fmt.Sprintf("cannot fetch logs from agent %s", kernel.Agent)}
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	rc2 := http.NewResponseController(w)
	_ = rc2.SetWriteDeadline(time.Time{}) // a followed log may run as long as the kernel
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 32<<10)
	for {
		n, err := rc.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client went away
			}
			_ = rc2.Flush()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && r.Context().Err() == nil {
				s.log.WarnContext(r.Context(), "logs stream", "kernel", kernel.ID, "err", err)
			}
			return nil
		}
	}
}

// reasonSuffix is ": reason" when there is one.
func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}
