package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/sokovan-go/sokovan/internal/admit"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
)

// maxApplyObjects bounds one apply, members of jobs counted.
const maxApplyObjects = 256

func (s *Server) applyRoutes() []route {
	return []route{{method: "POST", path: "/v1/apply", access: user,
		summary: "Create or update sessions, jobs and deployments by name (sokovan apply)",
		desc: "Each object is {kind, name, spec} where spec is the body of the kind's create route (POST /v1/sessions, " +
			"/v1/jobs, /v1/deployments); a Job may hold members, sessions of the job. The object's name is its identity " +
			"among the caller's live objects of the kind: none of that name is created; one with the same spec is " +
			"unchanged; a deployment with another spec is updated as PATCH /v1/deployments/{id} does (a new image, " +
			"command, resources or env rolls out); a session or job with another spec is refused with 409 naming the " +
			"field, as neither can change once submitted. A Session whose spec has array is an array, as POST " +
			"/v1/arrays makes one, named by the object: its live array of the name is the one meant, compared by its " +
			"indexes and its elements' spec, and a name is one live session or one live array (409 at spec.array " +
			"otherwise); a Job's member cannot be one. Every object is checked, as its create route checks it, " +
			"before any is written, so a refusal (its field is objects[i].… in the request) writes nothing. With " +
			"dry_run=true nothing is written, and each new session says where the scheduler would have it wait now " +
			"(its blockers, as why reports them) and its estimated start; a new array says so of each element, its " +
			"item of its first.",
		query: []param{{name: "dry_run", typ: "boolean", desc: "check everything and answer what would be done, writing nothing"}},
		body:  v1.ApplyRequest{}, status: http.StatusOK, resp: v1.Apply{}, handle: s.apply}}
}

// applyObject is one decoded object of an apply request.
type applyObject struct {
	index int
	field string // "objects[i]", where its errors are
	kind  string
	name  string
	sess  *v1.SessionObject
	job   *v1.JobObject
	dep   *v1.DeploymentObject
}

// applyPlan is what an apply decided, object by object, before it writes:
// the answer's items, the writes in order, and what a dry run needs.
type applyPlan struct {
	u     store.User
	items []v1.ApplyItem
	// writes are done in order once every object has been checked.
	writes []func(ctx context.Context) error
	// sessions and jobs are this request's objects by name, new (with the
	// id they are checked under and created with) or live, so later
	// objects may depend on or join them.
	sessions map[string]domain.SessionID
	jobs     map[string]domain.Job
	// fresh are the new sessions, arrays' elements included, and itemOf
	// the items of the sessions, elementOf the elements of the arrays
	// (in order in elements), for a dry run's round and estimate.
	fresh     []framework.PendingSession
	itemOf    map[domain.SessionID]int
	elementOf map[domain.SessionID]*dryElement
	elements  []*dryElement
	// arrays are the new arrays, whose cap a dry run's round applies.
	arrays map[domain.ArrayID]domain.Array
	// jobGroup is the resource group of each job's members.
	jobGroup map[domain.JobID]string
}

func (s *Server) apply(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	dry, err := queryBool(r, "dry_run")
	if err != nil {
		return err
	}
	objs, err := decodeApply(r)
	if err != nil {
		return err
	}
	p := &applyPlan{u: caller(ctx), sessions: map[string]domain.SessionID{}, jobs: map[string]domain.Job{},
		itemOf: map[domain.SessionID]int{}, jobGroup: map[domain.JobID]string{},
		elementOf: map[domain.SessionID]*dryElement{}, arrays: map[domain.ArrayID]domain.Array{}}
	for _, o := range objs {
		if err := s.planObject(ctx, p, o); err != nil {
			return err
		}
	}
	if dry {
		if err := s.dryWait(ctx, p); err != nil {
			return err
		}
		p.foldElements()
	} else {
		for i, write := range p.writes {
			if err := write(ctx); err != nil {
				return partly(i, err)
			}
		}
	}
	writeJSON(w, http.StatusOK, v1.Apply{DryRun: dry, Items: p.items})
	return nil
}

// partly says of a write that failed after others were done (a pending
// cap reached, a name taken meanwhile, a store fault) that those stand:
// every object was checked first, but the writes are one by one.
func partly(done int, err error) error {
	var e *apiError
	if done == 0 || !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Message += fmt.Sprintf(" (the %d writes before it were made; apply again once this is fixed: what was made is unchanged)", done)
	return &c
}

// decodeApply reads an apply request: each object is checked against
// its kind's shape, so a fault is named at its path in the request.
func decodeApply(r *http.Request) ([]applyObject, error) {
	raw, _, err := readObject(r)
	if err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(raw) {
		if k != "objects" {
			return nil, invalid(k, "unknown field %q", k)
		}
	}
	arr, ok := raw["objects"].([]any)
	if !ok {
		return nil, wrongType("objects", "an array of objects", raw["objects"])
	}
	if len(arr) == 0 || len(arr) > maxApplyObjects {
		return nil, invalid("objects", "must hold 1 to %d objects, not %d", maxApplyObjects, len(arr))
	}
	out := make([]applyObject, len(arr))
	seen := map[string]int{}
	members := 0
	for i, v := range arr {
		o, err := decodeObject(i, v)
		if err != nil {
			return nil, err
		}
		if o.job != nil {
			members += len(o.job.Members)
		}
		key := o.kind + "/" + o.name
		if j, dup := seen[key]; dup {
			return nil, invalid(o.field+".name", "%s %q is objects[%d] already: a name is the object's identity", o.kind, o.name, j)
		}
		seen[key] = i
		out[i] = o
	}
	if len(arr)+members > maxApplyObjects {
		return nil, invalid("objects", "hold %d objects with the jobs' members, more than %d", len(arr)+members, maxApplyObjects)
	}
	return out, nil
}

func decodeObject(i int, v any) (applyObject, error) {
	o := applyObject{index: i, field: fmt.Sprintf("objects[%d]", i)}
	m, ok := v.(map[string]any)
	if !ok {
		return o, wrongType(o.field, "an object", v)
	}
	o.kind, _ = m["kind"].(string)
	var dst any
	switch o.kind {
	case v1.KindSession:
		o.sess = &v1.SessionObject{}
		dst = o.sess
	case v1.KindJob:
		o.job = &v1.JobObject{}
		dst = o.job
	case v1.KindDeployment:
		o.dep = &v1.DeploymentObject{}
		dst = o.dep
	default:
		return o, invalid(o.field+".kind", "must be Session, Job or Deployment, not %s", quoteOr(m["kind"]))
	}
	if e := checkShape(v, reflect.TypeOf(dst).Elem(), o.field); e != nil {
		return o, e
	}
	b, err := json.Marshal(v)
	if err != nil {
		return o, invalid(o.field, "cannot be read: %v", err)
	}
	if err := strictDecode(b, dst); err != nil {
		return o, at(o.field, err)
	}
	o.name, _ = m["name"].(string)
	if err := checkObjectName(o.field, o.name); err != nil {
		return o, err
	}
	if o.job != nil {
		names := map[string]int{}
		for k, mb := range o.job.Members {
			f := fmt.Sprintf("%s.members[%d]", o.field, k)
			if err := checkObjectName(f, mb.Name); err != nil {
				return o, err
			}
			if j, dup := names[mb.Name]; dup {
				return o, invalid(f+".name", "members[%d] is named %q already", j, mb.Name)
			}
			names[mb.Name] = k
		}
	}
	return o, nil
}

func quoteOr(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	if v == nil {
		return "left out"
	}
	return jsonKind(v)
}

// checkObjectName holds an object's name to the rules of the names the
// create routes take; a name is what finds the object again.
func checkObjectName(field, name string) error {
	if name == "" {
		return invalid(field+".name", "a name is required: it is the object's identity")
	}
	if e := cleanText(field+".name", name, maxNameLen); e != nil {
		return e
	}
	return nil
}

// at puts an error's field under prefix: the create routes name fields of
// one request ("resources.mem"), apply names them in its whole request
// ("objects[2].spec.resources.mem"). An error of no field is the prefix's.
func at(prefix string, err error) error {
	if err == nil {
		return nil
	}
	var e *apiError
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	if c.Field = prefix; e.Field != "" {
		c.Field = join(prefix, e.Field)
	}
	return &c
}

// specName is the name a spec takes from its object: spec.name may be
// left out, and when given must agree.
func specName(field, objName, specName string) (string, error) {
	if specName != "" && specName != objName {
		return "", invalid(field+".spec.name", "is %q but the object is named %q: leave spec.name out, or make them equal",
			specName, objName)
	}
	return objName, nil
}

func (s *Server) planObject(ctx context.Context, p *applyPlan, o applyObject) error {
	item := v1.ApplyItem{Object: o.index, Kind: o.kind, Name: o.name}
	switch {
	case o.sess != nil && o.sess.Spec.Array != "":
		if o.sess.Spec.Job != "" {
			return invalid(o.field+".spec.job", "an array's elements cannot join a job")
		}
		return s.planArray(ctx, p, o.field, item, o.sess.Spec)
	case o.sess != nil:
		var job domain.Job
		if ref := o.sess.Spec.Job; ref != "" {
			var err error
			if job, err = s.applyJobRef(ctx, p, ref); err != nil {
				return at(o.field+".spec", err)
			}
		}
		return s.planSession(ctx, p, o.field, item, o.sess.Spec, job)
	case o.job != nil:
		return s.planJob(ctx, p, o, item)
	default:
		return s.planDeployment(ctx, p, o, item)
	}
}

// applyJobRef is the job a session object names: one of this request's,
// else as POST /v1/sessions resolves it.
func (s *Server) applyJobRef(ctx context.Context, p *applyPlan, ref string) (domain.Job, error) {
	if j, ok := p.jobs[ref]; ok {
		return j, nil
	}
	// Whether the job still takes members matters only for a session to
	// create (planSession): a member applied again is unchanged whatever
	// its job's state.
	j, err := s.resolveJob(ctx, p.u, ref)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return domain.Job{}, invalid("job", "no job %q", ref)
	}
	return j, err
}

// planSession checks a session object and decides: created when the
// caller has no live session of its name, unchanged when the live one is
// what the spec asks for, refused otherwise (a session cannot change).
func (s *Server) planSession(ctx context.Context, p *applyPlan, field string, item v1.ApplyItem,
	spec v1.CreateSessionRequest, job domain.Job) error {
	var err error
	if spec.Name, err = specName(field, item.Name, spec.Name); err != nil {
		return err
	}
	req := s.admitRequest(p.u, spec)
	req.Resolve = p.resolver(s)
	sess, kernels, err := s.build(ctx, req)
	if err != nil {
		return at(field+".spec", err)
	}
	if err := s.joinJob(ctx, p, &sess, spec, job); err != nil {
		return at(field+".spec", err)
	}
	live, err := s.liveSessionNamed(ctx, p.u, spec.Name)
	if err != nil {
		return err
	}
	if live != nil {
		if f := sessionDiff(sess, *live); f != "" {
			e := conflict("session %q (%s) is %s, and a session cannot change once submitted: its %s is not the file's. "+
				"End it (sokovan session rm %s) and apply again, or give the file's session another name",
				live.Name, live.ID, live.Status, f, live.ID)
			e.Field = field + ".spec." + f
			return e
		}
		item.Action, item.ID = "unchanged", string(live.ID)
		p.sessions[spec.Name] = live.ID
		p.items = append(p.items, item)
		return nil
	}
	if err := s.nameNotArray(ctx, p.u, field, spec.Name); err != nil {
		return err
	}
	if job.ID != "" && !job.State.Admits() {
		e := conflict("job %s is %s and takes no new members", job.Name, job.State)
		e.Field = field + ".spec.job"
		if item.Member != nil {
			e.Field = field
		}
		return e
	}
	if err := s.admit.CheckLimits(ctx, sess); err != nil {
		return at(field+".spec", fromAdmit(err))
	}
	item.Action, item.ID = "created", string(sess.ID)
	p.sessions[spec.Name] = sess.ID
	p.itemOf[sess.ID] = len(p.items)
	p.items = append(p.items, item)
	p.fresh = append(p.fresh, framework.PendingSession{Session: sess, Kernels: kernels})
	p.writes = append(p.writes, func(ctx context.Context) error {
		return at(field+".spec", s.submit(ctx, sess, kernels))
	})
	return nil
}

// resolver resolves dependencies on this request's sessions (earlier
// objects) first, then as POST /v1/sessions does.
func (p *applyPlan) resolver(s *Server) admit.Resolver {
	return func(ctx context.Context, ref string) (domain.SessionID, error) {
		if id, ok := p.sessions[ref]; ok {
			return id, nil
		}
		return s.dependency(ctx, ref)
	}
}

// joinJob makes sess a member of job, as POST /v1/sessions does with its
// job: never preemptible, in the one resource group of its job.
func (s *Server) joinJob(ctx context.Context, p *applyPlan, sess *domain.Session, spec v1.CreateSessionRequest, job domain.Job) error {
	if job.ID == "" {
		return nil
	}
	sess.Job = job.ID
	if spec.Preemptible != nil && *spec.Preemptible {
		return invalid("preemptible", "a job's member cannot be preempted: it would break the job's gang")
	}
	sess.Preemptible = false
	if g, ok := p.jobGroup[job.ID]; ok && g != sess.ResourceGroup {
		return invalid("resource_group", "job %s's members run in resource group %s; a gang cannot span groups", job.Name, g)
	}
	if err := s.checkJobGroup(ctx, job, sess.ResourceGroup); err != nil {
		return err
	}
	p.jobGroup[job.ID] = sess.ResourceGroup
	return nil
}

// liveSessionNamed is the caller's live session of the name, nil when
// there is none.
func (s *Server) liveSessionNamed(ctx context.Context, u store.User, name string) (*domain.Session, error) {
	ss, err := s.store.ListSessions(ctx, store.SessionFilter{User: u.Name, Name: name, Newest: true})
	if err != nil {
		return nil, err
	}
	for _, x := range ss {
		if !x.Status.Terminal() {
			// A listing leaves command and env out; the comparison needs
			// them.
			sk, err := s.store.GetSession(ctx, x.ID)
			if err != nil {
				return nil, err
			}
			return &sk.Session, nil
		}
	}
	return nil, nil
}

func (s *Server) planJob(ctx context.Context, p *applyPlan, o applyObject, item v1.ApplyItem) error {
	spec := o.job.Spec
	var err error
	if spec.Name, err = specName(o.field, o.name, spec.Name); err != nil {
		return err
	}
	j, e := s.newJob(p.u, spec)
	if e != nil {
		return at(o.field+".spec", e)
	}
	live, err := s.liveJobNamed(ctx, p.u, o.name)
	if err != nil {
		return err
	}
	if live != nil {
		if f := jobDiff(j, *live); f != "" {
			e := conflict("job %q (%s) is %s, and a job cannot change once created: its %s is not the file's. "+
				"Cancel it (sokovan job rm %s) and apply again, or give the file's job another name",
				live.Name, live.ID, live.State, f, live.ID)
			e.Field = o.field + ".spec." + f
			return e
		}
		j = *live
		item.Action = "unchanged"
	} else {
		item.Action = "created"
		p.writes = append(p.writes, func(ctx context.Context) error { return s.store.CreateJob(ctx, j) })
	}
	item.ID = string(j.ID)
	p.jobs[o.name] = j
	p.items = append(p.items, item)
	for k, m := range o.job.Members {
		f := fmt.Sprintf("%s.members[%d]", o.field, k)
		if m.Spec.Array != "" {
			return invalid(f+".spec.array", "a job's member cannot be an array: an array's elements cannot join a job")
		}
		if ref := m.Spec.Job; ref != "" && ref != j.Name && ref != string(j.ID) {
			return invalid(f+".spec.job", "is %q, but a member belongs to the job that holds it (%q): leave it out", ref, j.Name)
		}
		mi := v1.ApplyItem{Object: o.index, Member: &k, Kind: v1.KindSession, Name: m.Name}
		if err := s.planSession(ctx, p, f, mi, m.Spec, j); err != nil {
			return err
		}
	}
	return nil
}

// liveJobNamed is the caller's live job of the name, nil when there is
// none.
func (s *Server) liveJobNamed(ctx context.Context, u store.User, name string) (*domain.Job, error) {
	jobs, err := s.store.ListJobs(ctx, store.JobFilter{User: u.Name, Live: true})
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if j.Name == name && !j.State.Final() {
			return &j, nil
		}
	}
	return nil, nil
}

func (s *Server) planDeployment(ctx context.Context, p *applyPlan, o applyObject, item v1.ApplyItem) error {
	spec := o.dep.Spec
	var err error
	if spec.Name, err = specName(o.field, o.name, spec.Name); err != nil {
		return err
	}
	nd, err := s.newDeployment(ctx, p.u, spec)
	if err != nil {
		return at(o.field+".spec", err)
	}
	live, err := s.liveDeploymentNamed(ctx, p.u, o.name)
	if err != nil {
		return err
	}
	if live == nil {
		item.Action, item.ID = "created", string(nd.ID)
		p.items = append(p.items, item)
		p.writes = append(p.writes, func(ctx context.Context) error { return at(o.field+".spec", s.storeDeployment(ctx, nd)) })
		return nil
	}
	item.ID = string(live.ID)
	req, changed, e := deploymentDiff(*live, nd, spec)
	if e != nil {
		e.Field = o.field + ".spec." + e.Field
		return e
	}
	if len(changed) == 0 {
		item.Action = "unchanged"
		p.items = append(p.items, item)
		return nil
	}
	up, err := s.checkUpdate(ctx, *live, req)
	if err != nil {
		return at(o.field+".spec", err)
	}
	item.Action, item.Changed = "updated", changed
	p.items = append(p.items, item)
	p.writes = append(p.writes, func(ctx context.Context) error {
		_, err := s.writeUpdate(ctx, *live, up)
		return at(o.field+".spec", err)
	})
	return nil
}

// liveDeploymentNamed is the caller's live deployment of the name, nil
// when there is none.
func (s *Server) liveDeploymentNamed(ctx context.Context, u store.User, name string) (*domain.Deployment, error) {
	ds, err := s.store.ListDeployments(ctx, store.DeploymentFilter{User: u.Name, Name: name})
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		if !d.Status.Terminal() {
			return &d, nil
		}
	}
	return nil, nil
}

// dryWait runs, for each resource group with new sessions, one
// scheduling round on a fresh snapshot with them queued, as why does for
// a stored session, and the group's start estimate with them, writing
// neither.
func (s *Server) dryWait(ctx context.Context, p *applyPlan) error {
	byGroup := map[string][]framework.PendingSession{}
	var groups []string
	for _, ps := range p.fresh {
		g := ps.Session.ResourceGroup
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], ps)
	}
	for _, g := range groups {
		if err := s.dryWaitGroup(ctx, p, g, byGroup[g]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) dryWaitGroup(ctx context.Context, p *applyPlan, group string, fresh []framework.PendingSession) error {
	snap, err := s.store.LoadSnapshot(ctx, group, s.clock.Now())
	if err != nil {
		return err
	}
	snap.Pending = append(snap.Pending, fresh...)
	arrays := p.dryArrays(&snap, fresh)
	jobs, err := s.dryJobs(ctx, p, &snap, fresh)
	if err != nil {
		return err
	}
	if err := s.dryDependencies(ctx, p, &snap, fresh); err != nil {
		return err
	}
	plan, err := s.sched.Schedule(&snap)
	if err != nil {
		return fmt.Errorf("dry run of group %s: %w", group, err)
	}
	owners := make(map[domain.SessionID]string, len(snap.Pending))
	for _, ps := range snap.Pending {
		owners[ps.Session.ID] = ps.Session.Owner.User
	}
	for _, pl := range plan.Placements {
		if it := p.dryItem(pl.Session); it != nil {
			it.Wait = "starts now: the scheduler would place it in its next round"
		}
	}
	for n, d := range append(append([]framework.Decision(nil), plan.Impossible...), plan.Waiting...) {
		it := p.dryItem(d.Session)
		if it == nil {
			continue
		}
		never := n < len(plan.Impossible)
		for _, b := range d.Blockers {
			bo, hidden := s.visibleBlocker(p.u, owners, b)
			if hidden {
				bo.Message = "queued behind another session, which does not fit yet"
			}
			it.Blockers = append(it.Blockers, bo)
		}
		it.Wait = waitWords(never, it.Blockers)
	}
	if s.estWith == nil {
		return nil
	}
	// The blockers stand without the estimate; a failed replay only
	// leaves it out, as why does.
	starts, err := s.estWith(ctx, group, fresh, jobs, arrays)
	if err != nil {
		s.log.Warn("estimate start (dry run)", "group", group, "err", err)
		return nil
	}
	for _, ps := range fresh {
		if t, ok := starts[ps.Session.ID]; ok {
			if it := p.dryItem(ps.Session.ID); it != nil {
				it.EstimatedStart = &t
			}
		}
	}
	return nil
}

// waitWords says in one line what a new session would wait for: the
// first of its blockers, which the item lists in full.
func waitWords(never bool, bs []v1.Blocker) string {
	head := "waits"
	if never {
		head = "would never start"
	}
	if len(bs) == 0 {
		return head
	}
	return head + ": " + bs[0].Message
}

// dryJobs adds the jobs of the new sessions to the snapshot, as the store
// loads a job with pending members, counting the new members in; it
// returns the jobs for the estimate.
func (s *Server) dryJobs(ctx context.Context, p *applyPlan, snap *framework.Snapshot, fresh []framework.PendingSession) ([]domain.Job, error) {
	byID := map[domain.JobID]domain.Job{}
	for _, j := range p.jobs {
		byID[j.ID] = j
	}
	added := map[domain.JobID]int{}
	for _, ps := range fresh {
		if ps.Session.Job != "" {
			added[ps.Session.Job]++
		}
	}
	var jobs []domain.Job
	for id, n := range added {
		j, ok := byID[id]
		if !ok {
			var err error
			if j, err = s.store.GetJob(ctx, id); err != nil {
				return nil, err
			}
		}
		jobs = append(jobs, j)
		if snap.Jobs == nil {
			snap.Jobs = map[domain.JobID]framework.JobInfo{}
		}
		info, ok := snap.Jobs[id]
		if !ok {
			info = framework.JobInfo{MinAvailable: j.MinAvailable}
			members, err := s.store.JobMembers(ctx, id)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			for _, m := range members {
				if !m.Status.Terminal() {
					info.Live++
				}
				if m.Status.HoldsResources() && m.Status != domain.SessionTerminating {
					info.Placed++
				}
			}
		}
		info.Live += n
		snap.Jobs[id] = info
	}
	return jobs, nil
}

// dryDependencies gives the snapshot the state of what the new sessions
// depend on, which the store loads only for stored pending sessions.
func (s *Server) dryDependencies(ctx context.Context, p *applyPlan, snap *framework.Snapshot, fresh []framework.PendingSession) error {
	if snap.Dependencies == nil {
		snap.Dependencies = map[domain.SessionID]framework.DependencyState{}
	}
	for _, ps := range fresh {
		for _, d := range ps.Session.DependsOn {
			if _, ok := snap.Dependencies[d]; ok {
				continue
			}
			if _, planned := p.itemOf[d]; planned {
				snap.Dependencies[d] = framework.DependencyState{Status: domain.SessionPending}
				continue
			}
			sk, err := s.store.GetSession(ctx, d)
			if err != nil {
				return err
			}
			snap.Dependencies[d] = framework.DependencyState{Status: sk.Session.Status, Outcome: sk.Session.Outcome}
		}
	}
	return nil
}

// EstimateWithFunc is EstimateFunc with sessions not yet stored queued
// after the group's own, and the jobs and capped arrays they belong to:
// what a dry run of apply estimates with. The manager passes
// simulate.EstimatorWith.
type EstimateWithFunc func(ctx context.Context, group string, extra []framework.PendingSession, jobs []domain.Job,
	arrays []domain.Array) (map[domain.SessionID]time.Time, error)
