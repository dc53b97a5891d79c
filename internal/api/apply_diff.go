package api

import (
	"maps"
	"slices"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// sessionDiff compares a session admission just built from a file's spec
// with the live session of its name, field by field as admission fills
// them (defaults, the group's slot defaults and time limit, dependencies
// as ids), so a spec that leaves a default out and one that spells it
// (what `sokovan get -o yaml` writes) are the same spec. It returns the
// spec field of the first difference, "" when there is none.
func sessionDiff(want, live domain.Session) string {
	switch {
	case want.Type != live.Type:
		return "type"
	case want.Image != live.Image:
		return "image"
	case want.Architecture != live.Architecture:
		return "architecture"
	case !vecEqual(want.Requested, live.Requested):
		return "resources"
	case want.ClusterMode != live.ClusterMode:
		return "cluster_mode"
	case want.ClusterSize != live.ClusterSize:
		return "cluster_size"
	case want.Priority != live.Priority:
		return "priority"
	case want.ResourceGroup != live.ResourceGroup:
		return "resource_group"
	case !slices.Equal(want.DependsOn, live.DependsOn):
		return "depends_on"
	case !want.StartsAt.Equal(live.StartsAt):
		return "starts_at"
	case want.TimeLimit != live.TimeLimit:
		return "time_limit"
	case want.Preemptible != live.Preemptible:
		return "preemptible"
	case want.Requeue != live.Requeue:
		return "requeue"
	case !slices.Equal(want.DesignatedAgents, live.DesignatedAgents):
		return "designated_agents"
	case want.DesignatedStrict != live.DesignatedStrict:
		return "designated_strict"
	case !slices.Equal(want.Command, live.Command):
		return "command"
	case !maps.Equal(want.Env, live.Env):
		return "env"
	case want.Job != live.Job:
		return "job"
	}
	return ""
}

// vecEqual: a slot missing from either is zero.
func vecEqual(a, b domain.Vec) bool {
	for i := range max(len(a), len(b)) {
		if a.At(domain.SlotID(i)) != b.At(domain.SlotID(i)) {
			return false
		}
	}
	return true
}

// jobDiff is sessionDiff for jobs.
func jobDiff(want, live domain.Job) string {
	switch {
	case want.MinAvailable != live.MinAvailable:
		return "min_available"
	case want.PermitTimeout != live.PermitTimeout:
		return "permit_timeout"
	case want.FailurePolicy != live.FailurePolicy:
		return "failure_policy"
	}
	return ""
}

// deploymentDiff compares the deployment a file's spec makes with the
// live one of its name and returns the PATCH that makes the live one the
// file's, with the spec fields it changes; none when they agree. Replicas
// are left to the autoscaler when the file autoscales. The resource group
// and health check have no update: a change of either is refused, at its
// field.
func deploymentDiff(live, want domain.Deployment, spec v1.CreateDeploymentRequest) (v1.UpdateDeploymentRequest, []string, *apiError) {
	var req v1.UpdateDeploymentRequest
	var changed []string
	if want.Spec.ResourceGroup != live.Spec.ResourceGroup {
		e := conflict("deployment %q (%s) runs in resource group %s, and a deployment cannot move: destroy it "+
			"(sokovan deploy rm %s) and apply again, or give the file's deployment another name",
			live.Name, live.ID, live.Spec.ResourceGroup, live.ID)
		e.Field = "resource_group"
		return req, nil, e
	}
	if want.Health.Complete() != live.Health.Complete() {
		e := conflict("deployment %q (%s) has another health check, which an update cannot change: destroy it "+
			"(sokovan deploy rm %s) and apply again, or give the file's deployment another name", live.Name, live.ID, live.ID)
		e.Field = "health_check"
		return req, nil, e
	}
	if want.Spec.Image != live.Spec.Image {
		req.Image, changed = want.Spec.Image, append(changed, "image")
	}
	if !slices.Equal(want.Spec.Command, live.Spec.Command) {
		// Non-nil, so that an empty command is a change to none.
		req.Command, changed = append([]string{}, want.Spec.Command...), append(changed, "command")
	}
	if !maps.Equal(want.Spec.Resources, live.Spec.Resources) {
		req.Resources, changed = orEmpty(want.Spec.Resources), append(changed, "resources")
	}
	if !maps.Equal(want.Spec.Env, live.Spec.Env) {
		req.Env, changed = orEmpty(want.Spec.Env), append(changed, "env")
	}
	if want.MaxSurge != live.MaxSurge {
		req.MaxSurge, changed = &want.MaxSurge, append(changed, "max_surge")
	}
	if !autoscaleEqual(want.Autoscale, live.Autoscale) {
		req.Autoscale = spec.Autoscale
		if req.Autoscale == nil {
			req.Autoscale = &v1.Autoscale{} // max 0: off
		}
		changed = append(changed, "autoscale")
	}
	if want.Autoscale == nil && want.Replicas != live.Replicas {
		req.Replicas, changed = &want.Replicas, append(changed, "replicas")
	}
	return req, changed, nil
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func autoscaleEqual(a, b *domain.Autoscale) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// arrayDiff is sessionDiff for arrays: the indexes and cap first, the
// spec as written or not ("0-2" is "0,1,2"), then the elements' spec, as
// one element of each shows it, without the variables each element gets
// of its own.
func arrayDiff(want domain.Array, wantElem domain.Session, live domain.Array, liveElem domain.Session) string {
	w, werr := domain.ParseArraySpec(want.Spec)
	l, lerr := domain.ParseArraySpec(live.Spec)
	if werr != nil || lerr != nil || w.MaxRunning != l.MaxRunning || !slices.Equal(w.Indexes, l.Indexes) {
		return "array"
	}
	return sessionDiff(withoutArrayEnv(wantElem), withoutArrayEnv(liveElem))
}

// withoutArrayEnv is the session with the array's own variables taken
// out of its environment.
func withoutArrayEnv(s domain.Session) domain.Session {
	env := maps.Clone(s.Env)
	for _, k := range []string{domain.EnvArrayIndex, domain.EnvArrayCount, domain.EnvArrayID} {
		delete(env, k)
	}
	s.Env = env
	return s
}
