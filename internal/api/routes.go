package api

import (
	"net/http"
	"slices"
	"strings"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// route is one entry of the API: how it is matched, who may call it, and
// what the OpenAPI document says about it. The mux and the document are
// both built from this table, and a test checks them against each other.
type route struct {
	method string // "" matches every method (the agent RPC subtree)
	path   string // ServeMux path
	// docPath is the OpenAPI path when path is a subtree ("/v1/agent/").
	docPath string
	// docMethod is the method the OpenAPI document shows for a route
	// that matches every method; "" means post.
	docMethod string
	// passBody: the handler passes the request body on (the proxy), so
	// the API's body limit does not apply.
	passBody bool
	access   access
	summary  string
	desc     string
	query    []param
	body     any // request body type, nil for none
	// bodyOptional: the body may be left out (the defaults apply).
	bodyOptional bool
	status       int   // success status
	alt          []int // other success statuses with the same body
	resp         any   // success body type, nil for none
	// media is the success content type when it is not JSON.
	media string
	// stream marks an answer that lasts as long as the client wants it
	// (events, followed logs): it is left out of the latency histogram.
	stream bool
	// proxyCookie: a request without an Authorization header may bring
	// the token in the ProxyCookie instead (the session proxy only).
	proxyCookie bool
	handle      handlerFunc
}

// param is a query parameter.
type param struct {
	name, typ, desc string
	repeat          bool
}

func (rt route) pattern() string {
	if rt.method == "" {
		return rt.path
	}
	return rt.method + " " + rt.path
}

func (rt route) openAPIPath() string {
	if rt.docPath != "" {
		return rt.docPath
	}
	return rt.path
}

// pathParams are the {name} segments of the route's OpenAPI path.
func (rt route) pathParams() []string {
	var out []string
	for _, seg := range strings.Split(rt.openAPIPath(), "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}"))
		}
	}
	return out
}

// sessionRefDesc says how every /v1/sessions/{id} route reads {id}.
const sessionRefDesc = "{id} is the session's id, a unique prefix of it (6 characters or more), or its name " +
	"(unique among the owner's live sessions; a name only ended sessions have names the one of them, if only one). " +
	"409 when a prefix or name matches several sessions, listing them. Another user's session is 404, as a missing one."

// table is every route of the API, in the order the OpenAPI document
// lists them.
func (s *Server) table() []route {
	return slices.Concat(s.systemRoutes(), s.sessionRoutes(), s.agentRoutes(), s.groupRoutes(),
		s.policyRoutes(), s.eventRoutes(), s.agentRPCRoutes(),
		s.userRoutes(), s.jobRoutes(), s.arrayRoutes(), s.deployRoutes(), s.agentTokenRoutes(), s.clusterCARoutes(), s.applyRoutes(), s.applySchemaRoutes())
}

// systemRoutes are the unauthenticated routes of probes, metrics and the
// API document.
func (s *Server) systemRoutes() []route {
	return []route{
		{method: "GET", path: "/healthz", access: public, summary: "Liveness", status: http.StatusOK,
			resp: v1.Status{}, handle: s.healthz},
		{method: "GET", path: "/readyz", access: public, summary: "Readiness: the store answers and the manager is ready",
			status: http.StatusOK, resp: v1.Status{}, handle: s.readyz},
		{method: "GET", path: "/metrics", access: public, summary: "Prometheus metrics", status: http.StatusOK,
			media: "text/plain", handle: s.metrics},
		{method: "GET", path: "/v1/openapi.json", access: public, summary: "This document", status: http.StatusOK,
			media: "application/json", handle: s.openAPI},
	}
}

// sessionRoutes are the routes of sessions: submit, list, read, follow,
// reach and end.
func (s *Server) sessionRoutes() []route {
	statusParam := param{name: "status", typ: "string", repeat: true,
		desc: "only sessions in these statuses (repeat the parameter or separate with commas)"}
	return []route{
		{method: "POST", path: "/v1/sessions", access: user, summary: "Submit a session",
			desc: "Validates the whole request before writing anything. resources are per kernel. " +
				"429 when the caller's user, project or domain already has max_pending_sessions PENDING sessions.",
			body: v1.CreateSessionRequest{}, status: http.StatusCreated, resp: v1.Session{}, handle: s.createSession},
		{method: "GET", path: "/v1/sessions", access: user, summary: "List sessions, oldest first (or newest first)",
			desc: "Users see their own sessions; admins see everyone's and may filter by owner. " +
				"A full page has next: pass it as after= for the following one, with the same order. Listed sessions leave " +
				"command and env empty; GET /v1/sessions/{id} has them.",
			query: []param{statusParam,
				{name: "order", typ: "string", desc: "oldest (default) or newest first; limit keeps the first of that order"},
				{name: "name", typ: "string", desc: "only sessions of this name"},
				{name: "type", typ: "string", repeat: true, desc: "only sessions of these types (interactive, batch, inference)"},
				{name: "ended_within", typ: "string", desc: "leave out sessions that ended longer ago than this duration (such as 1h); live sessions are always listed"},
				{name: "limit", typ: "integer", desc: "at most this many (1 to 10000, default 1000)"},
				{name: "after", typ: "string", desc: "the next of the previous page: only sessions after that one"},
				{name: "owner", typ: "string", desc: "admins: only this user's sessions"},
				{name: "resource_group", typ: "string", desc: "only sessions of this resource group"}},
			status: http.StatusOK, resp: v1.SessionPage{}, handle: s.listSessions},
		{method: "GET", path: "/v1/sessions/{id}", access: user, summary: "One session with its kernels",
			desc:   sessionRefDesc,
			status: http.StatusOK, resp: v1.Session{}, handle: s.getSession},
		{method: "GET", path: "/v1/sessions/{id}/history", access: user, summary: "The session's handler outcomes, oldest first",
			status: http.StatusOK, resp: v1.List[v1.History]{}, handle: s.sessionHistory},
		{method: "GET", path: "/v1/sessions/{id}/why", access: user, summary: "What keeps a session from being scheduled, or from running",
			desc: "For a PENDING session, runs a dry scheduling round of the session's resource group on a fresh " +
				"snapshot and reports the session's blockers (empty when it would be placed now). For a session " +
				"placed but not yet RUNNING, or TERMINATING, blockers are empty and progress says what each kernel " +
				"still waits for, when the status's bound moves the session on, and the last failed attempt.",
			status: http.StatusOK, resp: v1.Why{}, handle: s.why},
		{method: "GET", path: "/v1/sessions/{id}/logs", access: user, summary: "A kernel's output, streamed from its agent",
			desc: "The log as written so far. To follow it, ask again with offset set to the bytes already read " +
				"until the session has ended (what `sokovan session logs -f` does).",
			query: []param{{name: "kernel", typ: "string", desc: "kernel id or cluster index (default: the main kernel)"},
				{name: "offset", typ: "integer", desc: "skip this many bytes of the log (default 0)"}},
			status: http.StatusOK, media: "text/plain", stream: true, handle: s.sessionLogs},
		{path: "/v1/sessions/{id}/proxy/{port}/{path...}", docPath: "/v1/sessions/{id}/proxy/{port}/{path}", docMethod: "get",
			access: user, summary: "Reach a port the session's kernel serves (any method)",
			desc: "Proxies the request to the service port named port (see the session's service_ports) of a RUNNING " +
				"session, with path as the kernel sees it. The session's owner or an admin only; others get 404. " +
				"The Authorization header is not passed on. A browser may bring the token in the cookie that " +
				"POST /v1/sessions/{id}/proxy-cookie/{port} sets instead; that cookie is not passed on either. " +
				"Answers stream; websocket upgrades are tunnelled. " +
				"409 when the session is not RUNNING, 502 when the kernel does not answer.",
			status: http.StatusOK, media: "application/octet-stream", stream: true, passBody: true, proxyCookie: true, handle: s.proxy},
		{method: "POST", path: "/v1/sessions/{id}/proxy-cookie/{port}", access: user,
			summary: "Let this browser open a service port's proxy path",
			desc: "For a browser, which cannot send the Authorization header when it opens a link: sets a cookie holding " +
				"the caller's token for the port's proxy_path only (HttpOnly, SameSite=Strict, 12 hours), which the session " +
				"proxy accepts in place of the header and does not pass on; no other route reads it. Answers the port. " +
				"The dashboard calls this before it opens a port. 409 when the session is not RUNNING.",
			status: http.StatusOK, resp: v1.ServicePort{}, handle: s.proxyCookie},
		{method: "DELETE", path: "/v1/sessions/{id}", access: user, summary: "End a session",
			desc: "PENDING sessions are CANCELLED at once; other live ones go TERMINATING and their kernels are " +
				"destroyed. 409 when the session has already ended.",
			query:  []param{{name: "force", typ: "boolean", desc: "kill the kernels at once, without the grace period (also for a session already terminating); recorded in the reason"}},
			status: http.StatusAccepted, resp: v1.Session{}, handle: s.deleteSession},
	}
}

// agentRoutes are the routes that list agents and that admins use to
// cordon, drain and retire them.
func (s *Server) agentRoutes() []route {
	return []route{
		{method: "GET", path: "/v1/agents", access: user, summary: "List agents",
			desc: "available_slots is the agent's total capacity (Backend.AI's meaning); free_slots is what is not occupied.",
			query: []param{{name: "resource_group", typ: "string", desc: "only agents of this resource group"},
				{name: "all", typ: "boolean", desc: "include TERMINATED (removed) agents, which are left out by default"}},
			status: http.StatusOK, resp: v1.List[v1.Agent]{}, handle: s.listAgents},
		{method: "GET", path: "/v1/agents/{id}", access: user, summary: "One agent",
			status: http.StatusOK, resp: v1.Agent{}, handle: s.getAgent},
		{method: "DELETE", path: "/v1/agents/{id}", access: admin, summary: "Remove (retire) a LOST agent",
			desc: "As Nomad's node purge: a LOST agent that holds no kernel becomes TERMINATED, no longer counts " +
				"against removing its resource group and is left out of GET /v1/agents unless all=true. 409 when " +
				"the agent is not LOST (stop it first) or still holds kernels (the manager gives them up once it has " +
				"been LOST for heartbeat_timeout + lost_grace). An agent that comes back registers again as a fresh, " +
				"schedulable agent. The answer is the agent as GET /v1/agents/{id} shows it.",
			status: http.StatusOK, resp: v1.Agent{}, handle: s.retireAgent},
		{method: "POST", path: "/v1/agents/{id}/cordon", access: admin, summary: "Stop placing new kernels on the agent",
			status: http.StatusOK, resp: v1.Agent{}, handle: s.cordon(false)},
		{method: "POST", path: "/v1/agents/{id}/uncordon", access: admin, summary: "Place kernels on the agent again",
			status: http.StatusOK, resp: v1.Agent{}, handle: s.cordon(true)},
		{method: "POST", path: "/v1/agents/{id}/drain", access: admin, summary: "Drain the agent",
			desc: "As Nomad's node drain: the agent becomes unschedulable and its sessions may end on their own; " +
				"once the deadline has passed, the manager terminates the sessions still running there, with a " +
				"reason naming the drain. The answer's drain reports progress (remaining_kernels, drained). Draining " +
				"again replaces the deadline; uncordon ends the drain.",
			query:  []param{{name: "deadline", typ: "string", desc: "Go duration after which what remains is terminated (\"0s\": at once; left out: no deadline)"}},
			status: http.StatusOK, resp: v1.Agent{}, handle: s.drain},
	}
}

// groupRoutes are the routes of resource groups and their queues.
func (s *Server) groupRoutes() []route {
	return []route{
		{method: "GET", path: "/v1/resource-groups", access: user, summary: "List resource groups",
			status: http.StatusOK, resp: v1.List[v1.Group]{}, handle: s.listGroups},
		{method: "GET", path: "/v1/resource-groups/{name}", access: user, summary: "One resource group",
			status: http.StatusOK, resp: v1.Group{}, handle: s.getGroup},
		{method: "GET", path: "/v1/resource-groups/{name}/queue", access: user, summary: "The group's PENDING sessions in the order the next round tries them",
			desc: "Runs a dry scheduling round of the group on a fresh snapshot, as why does, and lists its PENDING sessions in " +
				"the order the group's sequencer hands them out (higher priority first), with what the round would do " +
				"(start, wait, never) and the blockers. Users see their own sessions with their positions in the whole " +
				"queue; other users' sessions are only counted (hidden). estimated_start is why's estimate, absent when there is none.",
			status: http.StatusOK, resp: v1.Queue{}, handle: s.queue},
		{method: "GET", path: "/v1/resource-groups/{name}/utilisation", access: user, summary: "The group's capacity and occupancy over time", desc: "Averages per step of the manager's samples (every 10 s by default, kept 7 days) of the group's ALIVE agents, per slot; a step without samples has no point. At most 1000 points per slot.", query: []param{{name: "from", typ: "string", desc: "RFC 3339 start, inclusive (default: an hour before to)"}, {name: "to", typ: "string", desc: "RFC 3339 end, exclusive (default: now)"}, {name: "step", typ: "string", desc: "Go duration each point averages, at least 1s (default: about 360 points, at least 10s)"}}, status: http.StatusOK, resp: v1.Utilisation{}, handle: s.utilisation},
		{method: "PUT", path: "/v1/resource-groups/{name}", access: admin, summary: "Create or change a resource group",
			desc: "Fields left out keep their current value, or the default for a new group (ACTIVE, fifo, " +
				"concentrated, head_of_line skip, max_retries 3, the shared group_defaults' timeouts, else the built-in ones). Durations are Go durations " +
				"(\"90s\", \"15m\"); \"0s\" means no bound. 201 when the group is new. A state change goes through " +
				"seed 003's table (Start → ACTIVE, Stop → STOPPED, Remove → DRAINING; DRAINING has no way back, only DELETE): a move " +
				"it has no row for is refused with 409 and changes nothing. A DRAINING group refuses new sessions (409).",
			body: v1.GroupRequest{}, status: http.StatusOK, alt: []int{http.StatusCreated}, resp: v1.Group{}, handle: s.putGroup},
		{method: "DELETE", path: "/v1/resource-groups/{name}", access: admin, summary: "Remove a drained, empty resource group",
			desc: "Only a DRAINING group that holds no live session and no ALIVE or LOST agent, and is not the default " +
				"group, is removed (409 naming what is in the way otherwise). Removal is soft: the group answers once " +
				"more with state REMOVED, then is absent from every read and refuses sessions and agents, until a PUT " +
				"of its name creates a new group; its ended sessions keep naming it.",
			status: http.StatusOK, resp: v1.Group{}, handle: s.deleteGroup},
	}
}

// policyRoutes are the routes of the resource policies of users,
// projects and domains.
func (s *Server) policyRoutes() []route {
	return []route{
		{method: "PUT", path: "/v1/policies/{scope}/{name}", access: admin, summary: "Set the resource policy of a user, project or domain",
			desc: "scope is user, project or domain; name is the user's name, or the project or domain. Slots " +
				"left out of max_slots are unlimited; a zero count is no limit.",
			body: v1.PolicyRequest{}, status: http.StatusOK, resp: v1.Policy{}, handle: s.putPolicy},
		{method: "GET", path: "/v1/policies/{scope}/{name}", access: admin, summary: "A resource policy",
			status: http.StatusOK, resp: v1.Policy{}, handle: s.getPolicy},
	}
}

// eventRoutes is the server-sent stream of status changes.
func (s *Server) eventRoutes() []route {
	return []route{
		{method: "GET", path: "/v1/events", access: user, summary: "Server-sent events: session and kernel status changes",
			desc: "Each change is `id: <position>`, `event: session` or `event: kernel`, `data: <change JSON>`. " +
				"Resume with the Last-Event-ID header (or ?after=). Without either the stream starts now; with " +
				"?session= it first sends an `event: snapshot` holding each named session as GET /v1/sessions/{id} " +
				"shows it, so no change is missed between reading a session and following it. Users see their own " +
				"sessions only. Idle streams carry a comment line every 15 s. Changes are kept for the change_retention " +
				"setting (24 h by default); a stream resumed from further back misses what was pruned.",
			query: []param{{name: "session", typ: "string", repeat: true, desc: "only these sessions"},
				{name: "after", typ: "integer", desc: "start after this position (as Last-Event-ID)"}},
			status: http.StatusOK, resp: v1.Change{}, media: "text/event-stream", stream: true, handle: s.events},
	}
}

// agentRPCRoutes is the subtree the agents call.
func (s *Server) agentRPCRoutes() []route {
	return []route{
		{path: "/v1/agent/", docPath: "/v1/agent/{rpc}", access: agent, summary: "Agent RPC (agent token or agent certificate)",
			desc: "Served by the agent RPC handler, which sees the full path; user tokens are refused with 403. With agent " +
				"identities (the default) an agent presents its client certificate, and join (a join token in the body) " +
				"needs none; the shared agent token works only on a manager run with --insecure-shared-agent-token.",
			status: http.StatusOK, handle: s.agentRPCRoute},
	}
}

// userRoutes are the routes of users, their tokens and their usage.
func (s *Server) userRoutes() []route {
	return []route{
		{method: "POST", path: "/v1/users", access: admin, summary: "Create a user and its token",
			desc: "The token is shown once, in this answer; only its hash is stored.",
			body: v1.CreateUserRequest{}, status: http.StatusCreated, resp: v1.NewUser{}, handle: s.createUser},
		{method: "GET", path: "/v1/users", access: admin, summary: "List users by name",
			status: http.StatusOK, resp: v1.List[v1.User]{}, handle: s.listUsers},
		{method: "GET", path: "/v1/me", access: user, summary: "The caller",
			status: http.StatusOK, resp: v1.User{}, handle: s.me},
		{method: "POST", path: "/v1/me/token", access: user, summary: "Replace the caller's tokens with a new one",
			desc: "The new token is shown once, in this answer; every token the caller had, the one of this request " +
				"included, stops working at once. With a ttl (body, optional) the new token expires after it: from " +
				"then on it gets 401 saying it expired; without one it never expires.",
			body: v1.TokenRequest{}, bodyOptional: true, status: http.StatusOK, resp: v1.NewUser{}, handle: s.rotateToken},
		{method: "POST", path: "/v1/users/{name}/token", access: admin, summary: "Replace a user's tokens with a new one",
			desc: "For a token that leaked or a user who left: every token the user had stops working at once; the new " +
				"one is shown once, in this answer. An optional ttl makes it expire, as for /v1/me/token.",
			body: v1.TokenRequest{}, bodyOptional: true, status: http.StatusOK, resp: v1.NewUser{}, handle: s.rotateToken},
		{method: "GET", path: "/v1/me/usage", access: user, summary: "What the caller's sessions hold and ask for, against its quotas",
			desc: "occupied sums the requests of the caller's sessions that hold resources (SCHEDULED to TERMINATING), all " +
				"kernels together; pending those of its PENDING sessions. limits has each user, project and domain policy " +
				"over the caller with what that whole scope holds.",
			status: http.StatusOK, resp: v1.Usage{}, handle: s.usage},
		{method: "GET", path: "/v1/usage", access: user, summary: "Accounting: slot-hours used, per user, project, domain or group",
			desc: "Sums the hourly usage history (what kernels held, SCHEDULED to TERMINATING, credited by the manager's sweep) " +
				"over the range, per key and slot, in slot-hours: cpu-hours, GiB-hours of memory, device-hours. Admins " +
				"read everyone's; a user reads only their own use (any other user is 403). Items come by time, then key, then slot.",
			query: []param{{name: "since", typ: "string", desc: "how far back: a Go duration or whole days (\"30d\", the default), from the hour it falls in"},
				{name: "by", typ: "string", desc: "key: user (default), project, domain or group"},
				{name: "step", typ: "string", desc: "whole hours or days each point sums (\"1h\", \"1d\"); 0 (default): one point for the range"},
				{name: "group", typ: "string", desc: "only this resource group"},
				{name: "user", typ: "string", desc: "only this user (a user: only themselves)"},
				{name: "project", typ: "string", desc: "only this project"},
				{name: "slot", typ: "string", desc: "only this slot (e.g. cuda.device)"}},
			status: http.StatusOK, resp: v1.UsageReport{}, handle: s.usageHistory},
	}
}

// arrayRoutes are the routes of session arrays (SLURM's job arrays).
func (s *Server) arrayRoutes() []route {
	ref := "{id} is the array's id, a unique prefix of it (6 characters or more), or its name (the live array of " +
		"that name, else the newest). One element is a session named name[index]: GET /v1/sessions/name[7]."
	return []route{
		{method: "POST", path: "/v1/arrays", access: user, summary: "Submit a session array (SLURM's --array)",
			desc: "The body is a session request with array set to the indexes: \"0-99\", \"1,3,5-9:2\", and an optional " +
				"%N cap on how many elements hold resources at once (\"0-99%10\"); at most 10000 elements. name is " +
				"required; each element is a session named name[index] with SOKOVAN_ARRAY_INDEX, SOKOVAN_ARRAY_COUNT and " +
				"SOKOVAN_ARRAY_ID in its env. Admitted once and stored in one transaction: all elements or none. " +
				"400 naming array for a bad spec, 409 for a name taken, 429 when the elements would take the caller " +
				"past max_pending_sessions.",
			body: v1.CreateSessionRequest{}, status: http.StatusCreated, resp: v1.Array{}, handle: s.createArray},
		{method: "GET", path: "/v1/arrays", access: user, summary: "List arrays, newest first, with their elements counted",
			desc:   "Users see their own arrays; admins everyone's. At most 1000.",
			status: http.StatusOK, resp: v1.List[v1.Array]{}, handle: s.listArrays},
		{method: "GET", path: "/v1/arrays/{id}", access: user, summary: "One array with its elements in index order",
			desc: ref, status: http.StatusOK, resp: v1.Array{}, handle: s.getArray},
		{method: "DELETE", path: "/v1/arrays/{id}", access: user, summary: "End every live element of an array",
			desc: ref + " PENDING elements are cancelled together, the others terminated (force=true: at once). " +
				"409 when no element is live.",
			query:  []param{{name: "force", typ: "boolean", desc: "kill running elements' kernels without the grace period"}},
			status: http.StatusAccepted, resp: v1.ArrayRemoved{}, handle: s.deleteArray},
	}
}

// jobRoutes are the routes of jobs, gangs of separately submitted
// sessions.
func (s *Server) jobRoutes() []route {
	return []route{
		{method: "POST", path: "/v1/jobs", access: user, summary: "Create a job (a gang of sessions)",
			desc: "A job groups sessions submitted one by one with \"job\" on POST /v1/sessions. Its members start only " +
				"once at least min_available of them are placed together (all or none in a round); members placed " +
				"while the gang is short wait SCHEDULED (Permit) and are all released at permit_timeout. The job's " +
				"state follows seed 003's application states (docs/states.md).",
			body: v1.CreateJobRequest{}, status: http.StatusCreated, resp: v1.Job{}, handle: s.createJob},
		{method: "GET", path: "/v1/jobs", access: user, summary: "List jobs (the caller's; every job for admins)",
			status: http.StatusOK, resp: v1.List[v1.Job]{}, handle: s.listJobs},
		{method: "GET", path: "/v1/jobs/{id}", access: user, summary: "One job by id or name, with its members and history",
			status: http.StatusOK, resp: v1.Job{}, handle: s.getJob},
		{method: "DELETE", path: "/v1/jobs/{id}", access: user, summary: "Cancel a job",
			desc: "The job fails (reason \"cancelled\") and every live member is ended; it is FAILED once none is " +
				"left. 409 when it has already ended.",
			status: http.StatusAccepted, resp: v1.Job{}, handle: s.deleteJob},
	}
}
