package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/admit"
	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// MaxReplicas bounds a deployment's replicas.
const MaxReplicas = 64

// Kicker wakes the deployment controller after a user's change; nil
// leaves it to its next pass.
type Kicker interface{ Kick() }

func (s *Server) deployRoutes() []route {
	return append([]route{
		{method: "POST", path: "/v1/deployments", access: user, summary: "Create a model-serving deployment",
			desc: "Each of replicas (default 1, at most 64) routes is an inference session of the spec, submitted as POST " +
				"/v1/sessions submits (same checks, quotas and scheduler). The spec is validated as a session request " +
				"before anything is written. 409 when a live deployment of the caller has the name.",
			body: v1.CreateDeploymentRequest{}, status: http.StatusCreated, resp: v1.Deployment{}, handle: s.createDeployment},
		{method: "GET", path: "/v1/deployments", access: user, summary: "List deployments, oldest first",
			desc:   "Users see their own; admins everyone's. DESTROYED ones are left out unless all=true.",
			query:  []param{{name: "all", typ: "boolean", desc: "include DESTROYED deployments"}},
			status: http.StatusOK, resp: v1.List[v1.Deployment]{}, handle: s.listDeployments},
		{method: "GET", path: "/v1/deployments/{id}", access: user, summary: "One deployment with its routes",
			desc: "{id} is the deployment's id, a unique prefix of it (6 characters or more), or its name. A PROVISIONING " +
				"route whose session is PENDING carries that session's blockers.",
			status: http.StatusOK, resp: v1.Deployment{}, handle: s.getDeployment},
		{method: "PATCH", path: "/v1/deployments/{id}", access: user,
			summary: "Scale a deployment, change its rollout or autoscaling, or roll out a new spec",
			desc: "Fields left out are kept. replicas 0 to 64; max_surge is how many routes a rollout may run beyond them; " +
				"autoscale sizes the replicas from the proxies' load (max 0 turns it off). A new image, command, resources " +
				"or env (env replaces the whole environment) is a rolling update to the next revision: new routes start, an " +
				"old one ends only once a new one is HEALTHY, and a rollout whose new routes fail stops with the old ones " +
				"serving. 409 while a rollout is under way and a new spec is given, and once the deployment is being destroyed.",
			body: v1.UpdateDeploymentRequest{}, status: http.StatusOK, resp: v1.Deployment{}, handle: s.patchDeployment},
		{method: "DELETE", path: "/v1/deployments/{id}", access: user, summary: "Destroy a deployment",
			desc: "Sets replicas 0 and DESTROYING in one write; every route's session is ended, then the deployment is " +
				"DESTROYED. 409 when it is already being destroyed.",
			status: http.StatusAccepted, resp: v1.Deployment{}, handle: s.deleteDeployment},
		{method: "GET", path: "/v1/deployments/{id}/history", access: user,
			summary: "The deployment's and its routes' handler outcomes, oldest first",
			status:  http.StatusOK, resp: v1.List[v1.DeploymentHistory]{}, handle: s.deploymentHistory},
		{path: "/v1/deployments/{id}/proxy/{path...}", docPath: "/v1/deployments/{id}/proxy/{path}", docMethod: "get",
			access: deployment, summary: "Send a request to the deployment's replicas (any method)",
			desc: "Proxied to one of the deployment's HEALTHY routes, the one with the fewest requests in flight from this " +
				"manager (ties in turn), with path as the route sees it; every manager proxies. Open to the owner's (or an admin's) " +
				"token and to the deployment's own tokens (POST /v1/deployments/{id}/tokens). The Authorization header is " +
				"not passed on. An idempotent request (GET, HEAD, OPTIONS, PUT, DELETE without a body) refused at connect is " +
				"sent once more to another route. Answers stream; websocket upgrades are tunnelled. 503 when no route is " +
				"HEALTHY, 502 when the chosen route does not answer.",
			status: http.StatusOK, media: "application/octet-stream", stream: true, passBody: true, handle: s.deploymentProxy},
	}, s.deployTokenRoutes()...)
}

func parseDuration(field, v string, def time.Duration) (time.Duration, *apiError) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, invalid(field, "must be a duration such as \"5s\", not %q", v)
	}
	return d, nil
}

// healthCheck reads a request's health check over the defaults.
func healthCheck(req *v1.HealthCheck) (domain.HealthCheck, *apiError) {
	hc := domain.DefaultHealthCheck()
	if req == nil {
		return hc, nil
	}
	if req.Path != "" {
		if !strings.HasPrefix(req.Path, "/") || strings.ContainsAny(req.Path, " \t\r\n") || len(req.Path) > 1024 {
			return hc, invalid("health_check.path", "must be an absolute path such as /health")
		}
		hc.Path = req.Path
	}
	if req.Port < 0 || req.Port > 65535 {
		return hc, invalid("health_check.port", "must be 0 (the first service port) to 65535, not %d", req.Port)
	}
	hc.Port = req.Port
	var e *apiError
	if hc.Interval, e = parseDuration("health_check.interval", req.Interval, hc.Interval); e != nil {
		return hc, e
	}
	if hc.Timeout, e = parseDuration("health_check.timeout", req.Timeout, hc.Timeout); e != nil {
		return hc, e
	}
	if hc.InitialDelay, e = parseDuration("health_check.initial_delay", req.InitialDelay, hc.InitialDelay); e != nil {
		return hc, e
	}
	if hc.Interval < 100*time.Millisecond {
		return hc, invalid("health_check.interval", "must be at least 100ms")
	}
	if hc.Timeout <= 0 || hc.Timeout > time.Minute {
		return hc, invalid("health_check.timeout", "must be more than 0s and at most 1m")
	}
	for _, t := range []struct {
		field string
		v     int
		dst   *int
	}{{"health_check.success_threshold", req.SuccessThreshold, &hc.SuccessThreshold},
		{"health_check.failure_threshold", req.FailureThreshold, &hc.FailureThreshold}} {
		if t.v < 0 || t.v > 100 {
			return hc, invalid(t.field, "must be 1 to 100, not %d", t.v)
		}
		if t.v > 0 {
			*t.dst = t.v
		}
	}
	return hc, nil
}

// autoscale reads an autoscaling rule; nil (and no error) for max 0,
// which turns it off.
func autoscale(req *v1.Autoscale) (*domain.Autoscale, *apiError) {
	if req == nil || req.Max == 0 {
		return nil, nil
	}
	a := domain.Autoscale{Min: req.Min, Max: req.Max, Cooldown: time.Minute}
	if a.Min < 1 || a.Min > MaxReplicas {
		return nil, invalid("autoscale.min", "must be 1 to %d, not %d (a deployment without routes measures no load)", MaxReplicas, a.Min)
	}
	if a.Max < a.Min || a.Max > MaxReplicas {
		return nil, invalid("autoscale.max", "must be min (%d) to %d, not %d", a.Min, MaxReplicas, a.Max)
	}
	target, err := strconv.ParseFloat(req.Target, 64)
	if err != nil || !(target > 0 && target <= 1e6) {
		return nil, invalid("autoscale.target", "must be a number of requests in flight per route above 0, such as \"2\", not %q", req.Target)
	}
	a.Target = target
	var e *apiError
	if a.Cooldown, e = parseDuration("autoscale.cooldown", req.Cooldown, a.Cooldown); e != nil {
		return nil, e
	}
	return &a, nil
}

func checkSurge(n int) *apiError {
	if n < 1 || n > MaxReplicas {
		return invalid("max_surge", "must be 1 to %d, not %d", MaxReplicas, n)
	}
	return nil
}

func checkReplicas(n int) *apiError {
	if n < 0 || n > MaxReplicas {
		return invalid("replicas", "must be 0 to %d, not %d", MaxReplicas, n)
	}
	return nil
}

func (s *Server) createDeployment(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	var req v1.CreateDeploymentRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	d, err := s.newDeployment(ctx, caller(ctx), req)
	if err != nil {
		return err
	}
	if err := s.storeDeployment(ctx, d); err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/deployments/"+string(d.ID))
	writeJSON(w, http.StatusCreated, s.deploymentOut(ctx, d, nil, false))
	return nil
}

// newDeployment checks a deployment request completely, its spec as each
// route's session will be, and makes the PENDING deployment it asks for
// without storing it (POST /v1/deployments and apply).
func (s *Server) newDeployment(ctx context.Context, u store.User, req v1.CreateDeploymentRequest) (domain.Deployment, error) {
	if strings.TrimSpace(req.Name) == "" {
		return domain.Deployment{}, invalid("name", "a deployment needs a name")
	}
	if e := cleanText("name", req.Name, maxNameLen); e != nil {
		return domain.Deployment{}, e
	}
	if strings.ContainsAny(req.Name, " \t/") {
		return domain.Deployment{}, invalid("name", "must not contain spaces or slashes")
	}
	replicas := 1
	if req.Replicas != nil {
		replicas = *req.Replicas
	}
	if e := checkReplicas(replicas); e != nil {
		return domain.Deployment{}, e
	}
	hc, e := healthCheck(req.HealthCheck)
	if e != nil {
		return domain.Deployment{}, e
	}
	surge := 1
	if req.MaxSurge != nil {
		surge = *req.MaxSurge
	}
	if e := checkSurge(surge); e != nil {
		return domain.Deployment{}, e
	}
	auto, e := autoscale(req.Autoscale)
	if e != nil {
		return domain.Deployment{}, e
	}
	if auto != nil {
		replicas = max(auto.Min, min(auto.Max, replicas))
	}
	spec := domain.DeploymentSpec{Image: req.Image, Resources: req.Resources, Command: req.Command, Env: req.Env,
		ResourceGroup: req.ResourceGroup}
	// The spec is checked exactly as each route's session will be, so a
	// deployment that could never start a route is refused now.
	sess, _, err := s.build(ctx, admit.Route(domain.SessionID(newUUID()), ownerOf(u), req.Name, spec))
	if err != nil {
		return domain.Deployment{}, err
	}
	spec.ResourceGroup = sess.ResourceGroup
	now := s.clock.Now().UTC().Truncate(time.Microsecond)
	return domain.Deployment{ID: domain.DeploymentID(newUUID()), Name: req.Name, Owner: sess.Owner,
		Status: domain.DeploymentPending, StatusChangedAt: now, CreatedAt: now, Replicas: replicas, Spec: spec, Health: hc,
		Revision: 1, MaxSurge: surge, Autoscale: auto}, nil
}

// storeDeployment creates a deployment newDeployment made and wakes the
// controller.
func (s *Server) storeDeployment(ctx context.Context, d domain.Deployment) error {
	if err := s.store.CreateDeployment(ctx, d); err != nil {
		if errors.Is(err, store.ErrDeploymentNameTaken) {
			e := conflict("you already have a live deployment named %q; destroy it, or choose another name", d.Name)
			e.Field = "name"
			return e
		}
		return err
	}
	s.kickDeploy()
	return nil
}

func (s *Server) kickDeploy() {
	if s.deploy != nil {
		s.deploy.Kick()
	}
}

func (s *Server) listDeployments(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	u := caller(ctx)
	f := store.DeploymentFilter{}
	if !isAdmin(u) {
		f.User = u.Name
	}
	if v := r.URL.Query().Get("all"); v != "true" {
		for _, st := range domain.DeploymentStatuses() {
			if !st.Terminal() {
				f.Statuses = append(f.Statuses, st)
			}
		}
	}
	ds, err := s.store.ListDeployments(ctx, f)
	if err != nil {
		return err
	}
	routes, err := s.liveRoutes(ctx, mapped(ds, func(d domain.Deployment) domain.DeploymentID { return d.ID })...)
	if err != nil {
		return err
	}
	out := v1.List[v1.Deployment]{Items: []v1.Deployment{}}
	for _, d := range ds {
		out.Items = append(out.Items, s.deploymentOut(ctx, d, routes[d.ID], false))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// liveRoutes are the deployments' routes not yet TERMINATED.
func (s *Server) liveRoutes(ctx context.Context, ids ...domain.DeploymentID) (map[domain.DeploymentID][]domain.Route, error) {
	out := map[domain.DeploymentID][]domain.Route{}
	if len(ids) == 0 {
		return out, nil
	}
	var statuses []domain.RouteStatus
	for _, st := range domain.RouteStatuses() {
		if !st.Terminal() {
			statuses = append(statuses, st)
		}
	}
	rs, err := s.store.ListRoutes(ctx, store.RouteFilter{Deployments: ids, Statuses: statuses})
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		out[r.Deployment] = append(out[r.Deployment], r)
	}
	return out, nil
}

// resolveDeployment finds the deployment a reference names among those
// the caller may see: its id, its name (a live one first), or a unique id
// prefix. Another user's deployment is answered as a missing one.
func (s *Server) resolveDeployment(ctx context.Context, ref string) (domain.Deployment, error) {
	missing := notFound("no deployment %q (give its id, a unique id prefix of %d or more characters, or its name)", ref, minPrefix)
	if !validID(ref) {
		return domain.Deployment{}, missing
	}
	u := caller(ctx)
	mine := func(d domain.Deployment) bool { return isAdmin(u) || d.Owner.User == u.Name }
	d, err := s.store.GetDeployment(ctx, domain.DeploymentID(ref))
	switch {
	case err == nil && mine(d):
		return d, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return domain.Deployment{}, err
	}
	pick := func(f store.DeploymentFilter, as string) (domain.Deployment, bool, error) {
		if !isAdmin(u) {
			f.User = u.Name
		}
		ds, err := s.store.ListDeployments(ctx, f)
		if err != nil {
			return domain.Deployment{}, false, err
		}
		ds = liveFirst(ds, func(d domain.Deployment) bool { return d.Status.Terminal() })
		switch len(ds) {
		case 0:
			return domain.Deployment{}, false, nil
		case 1:
			return ds[0], true, nil
		}
		names := make([]string, 0, len(ds))
		for _, d := range ds[:min(len(ds), maxCandidates)] {
			names = append(names, fmt.Sprintf("%s (%s, %s)", d.ID, d.Name, d.Status))
		}
		e := conflict("%q is ambiguous: as %s it matches %s; give more of the id", ref, as, strings.Join(names, ", "))
		e.Field = "id"
		return domain.Deployment{}, false, e
	}
	if d, ok, err := pick(store.DeploymentFilter{Name: ref}, "name"); ok || err != nil {
		return d, err
	}
	if len(ref) < minPrefix || !isIDPrefix(ref) {
		return domain.Deployment{}, missing
	}
	if d, ok, err := pick(store.DeploymentFilter{IDPrefix: ref}, "id prefix"); ok || err != nil {
		return d, err
	}
	return domain.Deployment{}, missing
}

func (s *Server) getDeployment(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	d, err := s.resolveDeployment(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	routes, err := s.liveRoutes(ctx, d.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.deploymentOut(ctx, d, routes[d.ID], true))
	return nil
}

// updateDeployment applies change to the deployment as stored, guarded
// by its status, reading it again when the controller moved it between
// the read and the write.
func (s *Server) updateDeployment(ctx context.Context, id domain.DeploymentID, change func(*domain.Deployment) *apiError) (domain.Deployment, error) {
	for range 10 {
		d, err := s.store.GetDeployment(ctx, id)
		if err != nil {
			return d, err
		}
		from := d.Status
		if e := change(&d); e != nil {
			return d, e
		}
		err = s.store.UpdateDeployment(ctx, d, []domain.DeploymentStatus{from})
		if !errors.Is(err, store.ErrGuardFailed) {
			return d, err
		}
	}
	return domain.Deployment{}, conflict("deployment %s keeps changing; try again", id)
}

func (s *Server) patchDeployment(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	d, err := s.resolveDeployment(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	var req v1.UpdateDeploymentRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	up, err := s.checkUpdate(ctx, d, req)
	if err != nil {
		return err
	}
	if d, err = s.writeUpdate(ctx, d, up); err != nil {
		return err
	}
	routes, err := s.liveRoutes(ctx, d.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.deploymentOut(ctx, d, routes[d.ID], false))
	return nil
}

// deploymentUpdate is a checked PATCH of a deployment: the request, the
// spec it makes and its autoscaling rule.
type deploymentUpdate struct {
	req    v1.UpdateDeploymentRequest
	spec   domain.DeploymentSpec
	auto   *domain.Autoscale
	respec bool
}

// checkUpdate checks an update of d completely, a new spec as its routes'
// sessions will be, without writing (PATCH and apply, whose dry run stops
// here).
func (s *Server) checkUpdate(ctx context.Context, d domain.Deployment, req v1.UpdateDeploymentRequest) (deploymentUpdate, error) {
	up := deploymentUpdate{req: req, spec: d.Spec}
	up.respec = req.Image != "" || req.Command != nil || req.Resources != nil || req.Env != nil
	if req.Replicas == nil && req.MaxSurge == nil && req.Autoscale == nil && !up.respec {
		return up, invalid("replicas", "nothing to change: give replicas, max_surge, autoscale, image, command, resources or env")
	}
	auto, e := autoscale(req.Autoscale)
	if e != nil {
		return up, e
	}
	up.auto = auto
	if req.Replicas != nil {
		if e := checkReplicas(*req.Replicas); e != nil {
			return up, e
		}
	}
	if req.MaxSurge != nil {
		if e := checkSurge(*req.MaxSurge); e != nil {
			return up, e
		}
	}
	if up.respec {
		if req.Image != "" {
			up.spec.Image = req.Image
		}
		if req.Command != nil {
			up.spec.Command = req.Command
		}
		if req.Resources != nil {
			up.spec.Resources = req.Resources
		}
		if req.Env != nil {
			up.spec.Env = req.Env
		}
		// The new spec is checked as its routes' sessions will be.
		if _, _, err := s.build(ctx, admit.Route(domain.SessionID(newUUID()), d.Owner, d.Name, up.spec)); err != nil {
			return up, err
		}
	}
	if e := s.canUpdate(d, up.respec); e != nil {
		return up, e
	}
	return up, nil
}

// canUpdate is whether d, as it stands, takes an update (a new spec when
// respec).
func (s *Server) canUpdate(d domain.Deployment, respec bool) *apiError {
	if d.Status == domain.DeploymentDestroying || d.Status.Terminal() {
		return conflict("deployment %s is %s", d.ID, d.Status)
	}
	if respec && d.Status == domain.DeploymentDeploying {
		return conflict("deployment %s is rolling out revision %d; wait for it to end", d.ID, d.Revision)
	}
	return nil
}

// writeUpdate applies a checked update to the deployment as stored and
// records it in the deployment's history.
func (s *Server) writeUpdate(ctx context.Context, d domain.Deployment, up deploymentUpdate) (domain.Deployment, error) {
	req := up.req
	u := caller(ctx)
	now := s.clock.Now().UTC().Truncate(time.Microsecond)
	var from domain.DeploymentStatus
	d, err := s.updateDeployment(ctx, d.ID, func(d *domain.Deployment) *apiError {
		from = d.Status
		if e := s.canUpdate(*d, up.respec); e != nil {
			return e
		}
		if req.Replicas != nil {
			d.Replicas = *req.Replicas
		}
		if req.MaxSurge != nil {
			d.MaxSurge = *req.MaxSurge
		}
		if req.Autoscale != nil {
			d.Autoscale = up.auto
			if up.auto != nil {
				d.Replicas = max(up.auto.Min, min(up.auto.Max, d.Replicas))
			}
		}
		if up.respec {
			prev := d.Spec
			d.Spec, d.Revision = up.spec, d.Revision+1
			// The new revision's start failures are its own: the store
			// clears the backoff in the write that changes the revision.
			d.StartFailures, d.NextStartAt = 0, time.Time{}
			if to, ok := domain.UserMoveFrom(domain.HandlerUserUpdate, d.Status); ok {
				d.PrevSpec = &prev
				d.Status, d.StatusChangedAt = to, now
			}
		}
		return nil
	})
	if err != nil {
		return d, err
	}
	_ = s.store.AppendDeploymentHistory(ctx, []domain.DeploymentHistoryEntry{{Subject: d.ID, At: now,
		Cause: domain.HandlerUserUpdate, Result: domain.RouteSuccess, From: from.String(), To: d.Status.String(),
		Message: fmt.Sprintf("%s set %s", u.Name, strings.Join(updateWords(d, req, up.respec), ", "))}})
	s.kickDeploy()
	return d, nil
}

// updateWords says what an update set, for the history.
func updateWords(d domain.Deployment, req v1.UpdateDeploymentRequest, respec bool) []string {
	var what []string
	if req.Replicas != nil {
		what = append(what, fmt.Sprintf("replicas %d", d.Replicas))
	}
	if req.MaxSurge != nil {
		what = append(what, fmt.Sprintf("max_surge %d", d.MaxSurge))
	}
	if respec {
		what = append(what, fmt.Sprintf("revision %d (image %s)", d.Revision, d.Spec.Image))
	}
	if req.Autoscale != nil {
		if d.Autoscale == nil {
			what = append(what, "autoscaling off")
		} else {
			what = append(what, fmt.Sprintf("autoscaling %d to %d replicas at %g in flight per route",
				d.Autoscale.Min, d.Autoscale.Max, d.Autoscale.Target))
		}
	}
	return what
}

func (s *Server) deleteDeployment(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	d, err := s.resolveDeployment(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	now := s.clock.Now().UTC().Truncate(time.Microsecond)
	var from domain.DeploymentStatus
	d, err = s.updateDeployment(ctx, d.ID, func(d *domain.Deployment) *apiError {
		to, ok := domain.UserMoveFrom(domain.HandlerUserDestroy, d.Status)
		if !ok {
			return conflict("deployment %s is already %s", d.ID, d.Status)
		}
		// Desired 0 and DESTROYING in one write: no pass of the controller
		// can see one without the other and start a route.
		from = d.Status
		d.Status, d.StatusChangedAt, d.Replicas = to, now, 0
		return nil
	})
	if err != nil {
		return err
	}
	_ = s.store.AppendDeploymentHistory(ctx, []domain.DeploymentHistoryEntry{{Subject: d.ID, At: now,
		Cause: domain.HandlerUserDestroy, Result: domain.RouteSuccess, From: from.String(), To: d.Status.String(),
		Message: "destroyed by " + caller(ctx).Name}})
	s.kickDeploy()
	routes, err := s.liveRoutes(ctx, d.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, s.deploymentOut(ctx, d, routes[d.ID], false))
	return nil
}

func (s *Server) deploymentHistory(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	d, err := s.resolveDeployment(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	hs, err := s.store.DeploymentHistory(ctx, d.ID)
	if err != nil {
		return err
	}
	return writeList(w, hs, func(h domain.DeploymentHistoryEntry) v1.DeploymentHistory {
		return v1.DeploymentHistory{At: h.At.UTC(), Route: string(h.Route), Handler: string(h.Cause),
			Result: string(h.Result), From: h.From, To: h.To, Message: h.Message, Attempt: h.Attempt}
	})
}

func durationText(d time.Duration) string { return d.String() }

// deploymentOut writes a deployment for the wire. With blockers, each
// PROVISIONING route whose session is PENDING carries why's blockers.
func (s *Server) deploymentOut(ctx context.Context, d domain.Deployment, routes []domain.Route, blockers bool) v1.Deployment {
	hc := d.Health.Complete()
	out := v1.Deployment{ID: string(d.ID), Name: d.Name, Owner: d.Owner.User, Status: d.Status.String(),
		StatusChangedAt: d.StatusChangedAt.UTC(), CreatedAt: d.CreatedAt.UTC(), Replicas: d.Replicas, Image: d.Spec.Image,
		Resources: d.Spec.Resources, Command: d.Spec.Command, Env: d.Spec.Env, ResourceGroup: d.Spec.ResourceGroup,
		HealthCheck: v1.HealthCheck{Path: hc.Path, Port: hc.Port, Interval: durationText(hc.Interval), Timeout: durationText(hc.Timeout),
			InitialDelay: durationText(hc.InitialDelay), SuccessThreshold: hc.SuccessThreshold, FailureThreshold: hc.FailureThreshold},
		StartFailures: d.StartFailures, Revision: d.Revision, MaxSurge: d.MaxSurge, Routes: []v1.Route{}}
	if !d.NextStartAt.IsZero() {
		t := d.NextStartAt.UTC()
		out.NextStartAt = &t
	}
	if a := d.Autoscale; a != nil {
		out.Autoscale = &v1.Autoscale{Min: a.Min, Max: a.Max, Target: strconv.FormatFloat(a.Target, 'g', -1, 64),
			Cooldown: a.Cooldown.String()}
	}
	for _, r := range routes {
		ro := v1.Route{ID: string(r.ID), SessionID: string(r.Session), Status: r.Status.String(), StatusReason: r.StatusReason,
			StatusChangedAt: r.StatusChangedAt.UTC(), CreatedAt: r.CreatedAt.UTC(), Endpoint: r.Endpoint, Revision: r.Revision}
		if r.SessionStatus != 0 {
			ro.SessionStatus = r.SessionStatus.String()
		}
		if blockers && r.Status == domain.RouteProvisioning && r.SessionStatus == domain.SessionPending {
			bs, err := s.pendingBlockers(ctx, r.Session)
			if err != nil {
				s.log.Warn("route blockers", "route", r.ID, "err", err)
			}
			ro.Blockers = bs
		}
		out.Routes = append(out.Routes, ro)
	}
	return out
}

// pendingBlockers are what keeps a PENDING session from being placed, by
// a dry round of its group, as why reports them.
func (s *Server) pendingBlockers(ctx context.Context, id domain.SessionID) ([]v1.Blocker, error) {
	sk, err := s.store.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	snap, plan, err := s.dryRun(ctx, sk.Session.ResourceGroup)
	if err != nil {
		return nil, err
	}
	owners := make(map[domain.SessionID]string, len(snap.Pending))
	for _, p := range snap.Pending {
		owners[p.Session.ID] = p.Session.Owner.User
	}
	u := caller(ctx)
	var out []v1.Blocker
	for _, d := range append(plan.Impossible, plan.Waiting...) {
		if d.Session != id {
			continue
		}
		for _, b := range d.Blockers {
			bo, hidden := s.visibleBlocker(u, owners, b)
			if hidden {
				bo.Message = "queued behind another session, which does not fit yet"
			}
			out = append(out, bo)
		}
	}
	return out, nil
}
