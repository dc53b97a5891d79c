package deploy

import (
	"testing"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// TestDecideRoute is the route handlers' table: for each route status
// and what its session does, the act, the move and its message.
func TestDecideRoute(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	lim := Config{}.withDefaults().limits()
	const (
		prov, healthy, degraded, unhealthy = domain.RouteProvisioning, domain.RouteHealthy, domain.RouteDegraded, domain.RouteUnhealthy
		fts, term                          = domain.RouteFailedToStart, domain.RouteTerminating
		pending, running, ending, ended    = domain.SessionPending, domain.SessionRunning, domain.SessionTerminating, domain.SessionTerminated
	)
	for _, c := range []struct {
		name    string
		status  domain.RouteStatus
		sess    domain.SessionStatus
		age     time.Duration
		backoff time.Duration // until the deployment's next start
		// endpoint: the route's endpoint is recorded (its session was
		// found serving on an earlier pass).
		endpoint bool
		act      routeAct
		handler  domain.HandlerName
		result   domain.RouteResult
		msg      string
		reason   bool
	}{
		{name: "provisioning, session running: serve", status: prov, sess: running, act: actServe,
			handler: domain.HandlerProvisioningRoute, result: domain.RouteSuccess},
		{name: "provisioning, serving, waiting for its first check", status: prov, sess: running, endpoint: true, age: 10 * time.Minute},
		{name: "provisioning, serving past its bound without a check passed: failed start", status: prov, sess: running,
			endpoint: true, age: 10*time.Minute + 1, act: actFailStart, handler: domain.HandlerProvisioningRoute,
			result: domain.RouteFailure, msg: "its session ran 10m0s without passing a health check"},
		{name: "provisioning, session pending: wait", status: prov, sess: pending, age: time.Minute},
		{name: "provisioning, no session yet: wait", status: prov, age: 10 * time.Second},
		{name: "provisioning, no session past the grace: failed start", status: prov, age: 11 * time.Second, act: actFailStart,
			handler: domain.HandlerProvisioningRoute, result: domain.RouteFailure, msg: "its session was never created"},
		{name: "provisioning, session ended: failed start with its reason", status: prov, sess: ended, act: actFailStart,
			handler: domain.HandlerProvisioningRoute, result: domain.RouteFailure, msg: "its session ended TERMINATED", reason: true},
		{name: "provisioning, session ending: failed start", status: prov, sess: ending, act: actFailStart,
			handler: domain.HandlerProvisioningRoute, result: domain.RouteFailure, msg: "its session ended TERMINATING", reason: true},
		{name: "provisioning at its bound: waits", status: prov, sess: pending, age: 10 * time.Minute},
		{name: "provisioning past its bound: the table's move", status: prov, sess: pending, age: 10*time.Minute + 1, act: actFailStart,
			handler: domain.HandlerProvisioningRoute, result: domain.RouteFailure, msg: "its session was still PENDING after 10m0s"},
		{name: "healthy, session running: nothing", status: healthy, sess: running, age: time.Hour},
		{name: "healthy, session gone: leave", status: healthy, act: actLeave,
			handler: domain.HandlerRunningRoute, result: domain.RouteFailure, msg: "its session is gone"},
		{name: "degraded, session ended: leave with its reason", status: degraded, sess: ended, act: actLeave,
			handler: domain.HandlerRunningRoute, result: domain.RouteFailure, msg: "its session is TERMINATED", reason: true},
		{name: "unhealthy within the grace: nothing", status: unhealthy, sess: running, age: 29 * time.Second},
		{name: "unhealthy at the grace: evicted", status: unhealthy, sess: running, age: 30 * time.Second, act: actEvict,
			handler: domain.HandlerRouteEviction, result: domain.RouteSuccess, msg: "unhealthy for 30s"},
		{name: "failed to start, backing off: kept", status: fts, sess: ended, backoff: time.Second},
		{name: "failed to start, backoff over: ended", status: fts, sess: ended, act: actMove,
			handler: domain.HandlerRunningRoute, result: domain.RouteFailure, msg: "failed to start"},
		{name: "terminating, session ended: terminated", status: term, sess: ended, act: actMove,
			handler: domain.HandlerTerminatingRoute, result: domain.RouteSuccess, msg: "session ended"},
		{name: "terminating, draining: nothing", status: term, sess: running, age: time.Second},
		{name: "terminating, drained: end the session", status: term, sess: running, age: 2 * time.Second, act: actEndSession,
			msg: "route terminating: scale-in"},
		{name: "terminating, session ending: wait", status: term, sess: ending, age: time.Minute},
		{name: "terminating past its bound: the table's move", status: term, sess: ending, age: 5*time.Minute + 1, act: actMove,
			handler: domain.HandlerTerminatingRoute, result: domain.RouteSuccess, msg: "session still TERMINATING after 5m0s; its own bound ends it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := domain.Route{Status: c.status, SessionStatus: c.sess, StatusChangedAt: now.Add(-c.age), StatusReason: "scale-in"}
			if c.endpoint {
				r.Endpoint = "10.0.0.1:8080"
			}
			got := decideRoute(r, now.Add(c.backoff), now, lim)
			want := routeDecision{Act: c.act, Handler: c.handler, Result: c.result, Message: c.msg, WithReason: c.reason}
			if got != want {
				t.Errorf("decideRoute = %+v\nwant            %+v", got, want)
			}
		})
	}
}

// Every bounded status the decision ends past its bound is one the
// domain's table bounds, with the handler and result the table gives.
func TestRouteBoundsInCharge(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	lim := Config{}.withDefaults().limits()
	for _, b := range domain.RouteBounds() {
		sess := domain.SessionPending
		switch b.Status {
		case domain.RouteUnhealthy:
			sess = domain.SessionRunning
		case domain.RouteTerminating:
			sess = domain.SessionTerminating
		}
		r := domain.Route{Status: b.Status, SessionStatus: sess, StatusChangedAt: now.Add(-lim.Bound[b.Status] - time.Second)}
		got := decideRoute(r, now, now, lim)
		if got.Handler != b.Handler || got.Result != b.Result {
			t.Errorf("%s past its bound: %s %s, the table says %s %s", b.Status, got.Handler, got.Result, b.Handler, b.Result)
		}
	}
}
