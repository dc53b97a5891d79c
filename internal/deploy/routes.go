package deploy

import (
	"context"
	"fmt"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// routeAct is what a route's pass does, beyond the move itself: each act
// carries the move's consequences (backing off, ending the session).
type routeAct uint8

const (
	// actNone: nothing this pass.
	actNone routeAct = iota
	// actServe: the session runs; look its endpoint up and move to
	// serving, or fail the start if it cannot be reached.
	actServe
	// actFailStart: the route failed to start; back the deployment off
	// and end its session.
	actFailStart
	// actLeave: a live route whose session is no longer running leaves
	// at once, backing off if it never served.
	actLeave
	// actEvict: unhealthy past the eviction grace; leave (backing off if
	// it never served) and end the session.
	actEvict
	// actMove: a move with no consequence beyond itself.
	actMove
	// actEndSession: the drain grace of a terminating route is over: end
	// its session, no move.
	actEndSession
)

// routeDecision is decideRoute's answer.
type routeDecision struct {
	Act     routeAct
	Handler domain.HandlerName
	Result  domain.RouteResult
	Message string
	// WithReason: the message ends with the session's own status reason,
	// which the applier reads (only routes that end need it).
	WithReason bool
}

// routeLimits are the durations the route handlers go by: the bound of
// each bounded status (domain.RouteBounds names which handler ends it and
// how), and the graces around them.
type routeLimits struct {
	// Bound is each bounded status's limit, FAILED_TO_START's excepted:
	// that one lasts until the deployment's backoff ends.
	Bound map[domain.RouteStatus]time.Duration
	// MissingSession is how long a route may name a session that does not
	// exist (a crash between the route's write and its session's).
	MissingSession time.Duration
	// DrainGrace is how long a terminating route that served is kept out
	// of the proxies before its session is ended.
	DrainGrace time.Duration
}

// limits reads the route limits from the config.
func (c Config) limits() routeLimits {
	return routeLimits{
		Bound: map[domain.RouteStatus]time.Duration{
			domain.RouteProvisioning: c.ProvisionTimeout,
			domain.RouteUnhealthy:    c.EvictionGrace,
			domain.RouteTerminating:  c.TerminateTimeout,
		},
		MissingSession: c.MissingSessionGrace,
		DrainGrace:     c.DrainGrace,
	}
}

// boundMove is the move that ends a status past its bound, from the
// domain's table.
func boundMove(s domain.RouteStatus) (domain.HandlerName, domain.RouteResult) {
	for _, b := range domain.RouteBounds() {
		if b.Status == s {
			return b.Handler, b.Result
		}
	}
	panic(fmt.Sprintf("deploy: %s has no bound in domain.RouteBounds", s))
}

// decideRoute is the route handlers' rule over values: from the route,
// its session's status and the deployment's backoff, what this pass does.
// It makes the moves that need no network: liveness follows the session,
// provisioning, eviction, termination, and the bounds.
func decideRoute(r domain.Route, nextStartAt, now time.Time, lim routeLimits) routeDecision {
	sess := r.SessionStatus
	age := now.Sub(r.StatusChangedAt)
	fail := func(msg string, withReason bool) routeDecision {
		return routeDecision{Act: actFailStart, Handler: domain.HandlerProvisioningRoute, Result: domain.RouteFailure,
			Message: msg, WithReason: withReason}
	}
	switch r.Status {
	case domain.RouteProvisioning:
		switch {
		case sess == domain.SessionRunning && r.Endpoint == "":
			return routeDecision{Act: actServe, Handler: domain.HandlerProvisioningRoute, Result: domain.RouteSuccess}
		case sess == domain.SessionRunning:
			// Serving at its endpoint, waiting for its first health
			// result; the bound counts from when its session started.
			if age > lim.Bound[r.Status] {
				h, res := boundMove(r.Status)
				return routeDecision{Act: actFailStart, Handler: h, Result: res,
					Message: fmt.Sprintf("its session ran %s without passing a health check", lim.Bound[r.Status])}
			}
		case sess == 0 && age > lim.MissingSession:
			return fail("its session was never created", false)
		case sess.Terminal() || sess == domain.SessionTerminating:
			return fail("its session ended "+sess.String(), true)
		case age > lim.Bound[r.Status]:
			h, res := boundMove(r.Status)
			return routeDecision{Act: actFailStart, Handler: h, Result: res,
				Message: fmt.Sprintf("its session was still %s after %s", sess, lim.Bound[r.Status])}
		}
	case domain.RouteHealthy, domain.RouteDegraded, domain.RouteUnhealthy:
		if sess != domain.SessionRunning {
			// A route whose session ended leaves HEALTHY at once: it is
			// no replica any more, whatever its last check said. The
			// session's own transaction moves one that served; one that
			// never did is moved here, so that its end is counted once.
			d := routeDecision{Act: actLeave, Handler: domain.HandlerRunningRoute, Result: domain.RouteFailure,
				Message: "its session is gone"}
			if sess != 0 {
				d.Message, d.WithReason = "its session is "+sess.String(), true
			}
			return d
		}
		if r.Status == domain.RouteUnhealthy && age >= lim.Bound[r.Status] {
			h, res := boundMove(r.Status)
			return routeDecision{Act: actEvict, Handler: h, Result: res,
				Message: fmt.Sprintf("unhealthy for %s", age.Truncate(time.Second))}
		}
	case domain.RouteFailedToStart:
		// Kept in sight while the deployment backs off, then ended; its
		// session was asked to end when it failed.
		if !now.Before(nextStartAt) {
			h, res := boundMove(r.Status)
			return routeDecision{Act: actMove, Handler: h, Result: res, Message: "failed to start"}
		}
	case domain.RouteTerminating:
		h, res := boundMove(r.Status)
		switch {
		case sess == 0 || sess.Terminal():
			return routeDecision{Act: actMove, Handler: h, Result: res, Message: "session ended"}
		case age > lim.Bound[r.Status]:
			return routeDecision{Act: actMove, Handler: h, Result: res,
				Message: fmt.Sprintf("session still %s after %s; its own bound ends it", sess, lim.Bound[r.Status])}
		case sess != domain.SessionTerminating && age >= lim.DrainGrace:
			return routeDecision{Act: actEndSession, Message: "route terminating: " + r.StatusReason}
		}
	}
	return routeDecision{}
}

// route carries out decideRoute's decision for r.
func (c *Controller) route(ctx context.Context, d *domain.Deployment, r *domain.Route, now time.Time) error {
	dec := decideRoute(*r, d.NextStartAt, now, c.limits)
	msg := dec.Message
	if dec.WithReason {
		msg += c.sessionReason(ctx, r)
	}
	move := func() error { return c.moveRoute(ctx, d, r, dec.Handler, dec.Result, now, msg) }
	switch dec.Act {
	case actServe:
		endpoint, err := c.endpoint(ctx, d, r)
		if err != nil {
			return c.failStart(ctx, d, r, now, fmt.Sprintf("session runs but cannot be reached: %v", err))
		}
		// It stays PROVISIONING, now with an endpoint to check; its clock
		// restarts, so the bound and the initial delay count from the
		// session's start rather than the route's.
		r.Endpoint, r.StatusChangedAt, r.StatusReason = endpoint, now, "session running at "+endpoint+"; waiting for its first health check"
		msg = r.StatusReason
		return move()
	case actFailStart:
		return c.failStart(ctx, d, r, now, msg)
	case actLeave:
		return c.endUnserved(ctx, d, r, now, move)
	case actEvict:
		if err := c.endUnserved(ctx, d, r, now, move); err != nil {
			return err
		}
		return c.endSession(ctx, r, "evicted: unhealthy")
	case actMove:
		return move()
	case actEndSession:
		return c.endSession(ctx, r, msg)
	}
	return nil
}
