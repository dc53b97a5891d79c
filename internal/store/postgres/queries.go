package postgres

import "github.com/sokovan-go/sokovan/internal/store/internal/codec"

// Lists travel as arrays; an optional filter is
// "cardinality($n) = 0 OR col = ANY($n)" or "$n = '' OR col = $n".
// Rows that will be written are locked FOR NO KEY UPDATE, which does not
// block inserts that merely reference them (a new dependency, a history
// row), and always sessions before agents, each in id order.

// Status sets that hold resources (domain's HoldsResources); a test checks
// them against the domain package.
const (
	holdingKernelStatuses  = `('SCHEDULED', 'PREPARING', 'PULLING', 'PREPARED', 'CREATING', 'RUNNING', 'TERMINATING')`
	holdingSessionStatuses = `('SCHEDULED', 'PREPARING', 'PREPARED', 'CREATING', 'RUNNING', 'TERMINATING')`
)

const (
	upsertGroup = `INSERT INTO resource_groups (` + codec.GroupColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (name) DO UPDATE SET
    state = excluded.state, sequencer = excluded.sequencer, selector = excluded.selector,
    head_of_line = excluded.head_of_line, max_retries = excluded.max_retries,
    pending_timeout_ns = excluded.pending_timeout_ns, scheduled_timeout_ns = excluded.scheduled_timeout_ns,
    preparing_timeout_ns = excluded.preparing_timeout_ns, prepared_timeout_ns = excluded.prepared_timeout_ns,
    creating_timeout_ns = excluded.creating_timeout_ns, terminating_timeout_ns = excluded.terminating_timeout_ns,
    allowed_types = excluded.allowed_types, default_slots = excluded.default_slots, min_slots = excluded.min_slots`
	selectGroup       = `SELECT ` + codec.GroupColumns + ` FROM resource_groups WHERE name = $1`
	selectGroups      = `SELECT ` + codec.GroupColumns + ` FROM resource_groups ORDER BY name`
	selectGroupCursor = `SELECT rr_cursor FROM resource_groups WHERE name = $1`
	saveGroupCursor   = `UPDATE resource_groups SET rr_cursor = $1 WHERE name = $2`
)

const (
	registerAgent = `INSERT INTO agents (` + codec.AgentColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (id) DO UPDATE SET
    resource_group = excluded.resource_group, address = excluded.address,
    architecture = excluded.architecture, runtime = excluded.runtime, status = 'ALIVE',
    capacity = excluded.capacity, max_kernels = excluded.max_kernels,
    last_heartbeat = excluded.last_heartbeat, epoch = agents.epoch + 1,
    images = excluded.images, labels = excluded.labels
RETURNING ` + codec.AgentColumns
	heartbeatAgent = `WITH a AS (SELECT id, epoch FROM agents WHERE id = $1 FOR NO KEY UPDATE),
u AS (UPDATE agents SET last_heartbeat = $3 FROM a WHERE agents.id = a.id AND a.epoch = $2 RETURNING agents.id)
SELECT a.epoch FROM a`
	setAgentStatus      = `UPDATE agents SET status = $1 WHERE id = $2`
	setAgentSchedulable = `UPDATE agents SET schedulable = $1 WHERE id = $2`
	selectAgent         = `SELECT ` + codec.AgentColumns + ` FROM agents WHERE id = $1`
	selectAgents        = `SELECT ` + codec.AgentColumns + ` FROM agents
WHERE ($1 = '' OR resource_group = $1) AND (cardinality($2::text[]) = 0 OR status = ANY($2))
  AND (cardinality($3::text[]) = 0 OR id = ANY($3))
ORDER BY id`
	selectGroupAgents = `SELECT ` + codec.AgentColumns + ` FROM agents WHERE resource_group = $1 ORDER BY id`
)

const (
	insertSession = `INSERT INTO sessions (` + codec.SessionColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)`
	insertKernel = `INSERT INTO kernels (` + codec.KernelColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	insertDependency = `INSERT INTO session_dependencies (session_id, depends_on) VALUES ($1, $2)`
	selectSession    = `SELECT ` + codec.SessionColumns + ` FROM sessions WHERE id = $1`
	selectSessions   = `SELECT ` + codec.SessionColumns + ` FROM sessions
WHERE (cardinality($1::text[]) = 0 OR status = ANY($1))
  AND ($2 = '' OR owner_user = $2)
  AND ($3 = '' OR owner_project = $3)
  AND ($4 = '' OR owner_domain = $4)
  AND ($5 = '' OR resource_group = $5)
  AND (cardinality($7::text[]) = 0 OR id = ANY($7))
ORDER BY created_at, id
LIMIT $6`
	selectDependencies = `SELECT session_id, depends_on FROM session_dependencies
WHERE session_id = ANY($1) ORDER BY session_id, depends_on`
	selectSessionKernels = `SELECT ` + codec.KernelColumns + ` FROM kernels WHERE session_id = $1 ORDER BY cluster_idx`
	selectKernels        = `SELECT ` + codec.KernelColumns + ` FROM kernels
WHERE (cardinality($1::text[]) = 0 OR session_id = ANY($1))
  AND (cardinality($2::text[]) = 0 OR agent_id = ANY($2))
  AND (cardinality($3::text[]) = 0 OR status = ANY($3))
  AND (cardinality($4::text[]) = 0 OR id = ANY($4))
ORDER BY session_id, cluster_idx`
	selectKernel      = `SELECT ` + codec.KernelColumns + ` FROM kernels WHERE id = $1`
	lockAvoidAgents   = `SELECT avoid_agents FROM sessions WHERE id = $1 FOR NO KEY UPDATE`
	updateAvoidAgents = `UPDATE sessions SET avoid_agents = $1 WHERE id = $2`
)

const (
	insertUser    = `INSERT INTO users (` + codec.UserColumns + `) VALUES ($1, $2, $3, $4, $5, $6)`
	insertToken   = `INSERT INTO tokens (hash, user_id, created_at) VALUES ($1, $2, $3)`
	selectByToken = `SELECT ` + codec.UserColumns + ` FROM users WHERE id = (SELECT user_id FROM tokens WHERE hash = $1)`
	upsertPolicy  = `INSERT INTO policies (` + codec.PolicyColumns + `) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (scope, name) DO UPDATE SET
    max_slots = excluded.max_slots, max_concurrent_sessions = excluded.max_concurrent_sessions,
    max_pending_sessions = excluded.max_pending_sessions`
	selectPolicy = `SELECT ` + codec.PolicyColumns + ` FROM policies WHERE scope = $1 AND name = $2`
)

// Snapshot reads, sent as one batch; $1 is always the group.
const (
	pendingInGroup       = `SELECT id FROM sessions WHERE resource_group = $1 AND status = 'PENDING'`
	selectPendingOfGroup = `SELECT ` + codec.SessionColumns + ` FROM sessions
WHERE resource_group = $1 AND status = 'PENDING' ORDER BY created_at, id`
	selectPendingKernels = `SELECT ` + codec.KernelColumns + ` FROM kernels
WHERE session_id IN (` + pendingInGroup + `) ORDER BY session_id, cluster_idx`
	selectPendingDependencies = `SELECT d.session_id, d.depends_on, dep.status, dep.outcome
FROM session_dependencies d JOIN sessions dep ON dep.id = d.depends_on
WHERE d.session_id IN (` + pendingInGroup + `)
ORDER BY d.session_id, d.depends_on`
	selectUsageSlots = `SELECT s.owner_user, s.owner_project, s.owner_domain, s.resource_group = $1, e.key,
       SUM(e.value::bigint)::bigint
FROM kernels k JOIN sessions s ON s.id = k.session_id CROSS JOIN LATERAL jsonb_each_text(k.requested) e
WHERE k.status IN ` + holdingKernelStatuses + `
GROUP BY s.owner_user, s.owner_project, s.owner_domain, s.resource_group = $1, e.key`
	selectUsageCounts = `SELECT owner_user, owner_project, owner_domain, COUNT(*) FROM sessions
WHERE status IN ` + holdingSessionStatuses + `
GROUP BY owner_user, owner_project, owner_domain`
	selectPendingPolicies = `SELECT ` + codec.PolicyColumns + ` FROM policies
WHERE (scope = 'user' AND name IN (SELECT owner_user FROM sessions WHERE resource_group = $1 AND status = 'PENDING'))
   OR (scope = 'project' AND name IN (SELECT owner_project FROM sessions WHERE resource_group = $1 AND status = 'PENDING'))
   OR (scope = 'domain' AND name IN (SELECT owner_domain FROM sessions WHERE resource_group = $1 AND status = 'PENDING'))`
)

// Plan application and transitions.
const (
	lockPlanSessions = `SELECT id, status, resource_group FROM sessions
WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`
	selectPlanKernels = `SELECT id, session_id, status, requested FROM kernels WHERE session_id = ANY($1)`
	lockPlanAgents    = `SELECT id, resource_group, status, schedulable, capacity, occupied, kernel_count, max_kernels
FROM agents WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`
	scheduleSessions = `UPDATE sessions SET status = 'SCHEDULED', status_reason = '', status_changed_at = $1
WHERE id = ANY($2) AND status = 'PENDING'`
	scheduleKernels = `UPDATE kernels k
SET status = 'SCHEDULED', status_reason = '', status_changed_at = $1, agent_id = u.agent
FROM unnest($2::text[], $3::text[]) AS u(id, agent)
WHERE k.id = u.id AND k.status = 'PENDING'`
	writeOccupancy = `UPDATE agents a SET occupied = u.occupied::jsonb, kernel_count = u.kernels
FROM unnest($1::text[], $2::text[], $3::int[]) AS u(id, occupied, kernels)
WHERE a.id = u.id`
	lockOccupancy = `SELECT id, occupied, kernel_count FROM agents WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`

	lockGuardSessions = `SELECT id FROM sessions WHERE id = ANY($1) AND status = ANY($2)
ORDER BY id FOR NO KEY UPDATE`
	// lockGuardRequeue is lockGuardSessions for a move back to PENDING: a
	// session with a kernel that already ended cannot start over, because
	// that kernel cannot follow it (DESIGN.md invariant 2).
	lockGuardRequeue = `SELECT id FROM sessions s WHERE id = ANY($1) AND status = ANY($2)
  AND NOT EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id
                  AND k.status IN ('TERMINATED', 'CANCELLED', 'ERROR'))
ORDER BY id FOR NO KEY UPDATE`
	moveSessions = `UPDATE sessions SET status = $1, status_reason = $2, status_changed_at = $3
WHERE id = ANY($4)`
	selectMovableKernels = `SELECT id, agent_id, status, requested FROM kernels
WHERE session_id = ANY($1) AND status = ANY($2)`
	moveKernels = `UPDATE kernels
SET status = $1, status_reason = $2, status_changed_at = $3,
    agent_id = CASE WHEN $1 = 'PENDING' THEN NULL ELSE agent_id END
WHERE id = ANY($4)`
	// A session that ends records how: success only when every kernel
	// terminated with exit code 0 (domain.Outcome).
	setOutcome = `UPDATE sessions s SET outcome = CASE
    WHEN s.status = 'CANCELLED' THEN 'cancelled'
    WHEN s.status = 'ERROR' THEN 'failure'
    WHEN EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id
                 AND (k.status <> 'TERMINATED' OR k.exit_code IS NULL OR k.exit_code <> 0)) THEN 'failure'
    ELSE 'success' END
WHERE s.id = ANY($1) AND s.status IN ('TERMINATED', 'CANCELLED', 'ERROR')`
	lockKernelSession = `SELECT id FROM sessions WHERE id = (SELECT session_id FROM kernels WHERE id = $1) FOR NO KEY UPDATE`
	updateKernel      = `UPDATE kernels
SET status = $1, status_reason = $2, status_changed_at = $3, exit_code = COALESCE($4, exit_code),
    container_id = CASE WHEN $5 = '' THEN container_id ELSE $5 END,
    agent_id = CASE WHEN $1 = 'PENDING' THEN NULL ELSE agent_id END
WHERE id = $6 AND status = $7`
)

const (
	lockSessions      = `SELECT id FROM sessions WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`
	selectLastHistory = `SELECT DISTINCT ON (session_id) id, ` + codec.HistoryColumns + ` FROM scheduling_history
WHERE session_id = ANY($1) ORDER BY session_id, id DESC`
	mergeHistory = `UPDATE scheduling_history h SET attempt = u.attempt, at = u.at
FROM unnest($1::bigint[], $2::int[], $3::timestamptz[]) AS u(id, attempt, at)
WHERE h.id = u.id`
	// WITH ORDINALITY keeps the batch's order in the ids the rows get.
	insertHistory = `INSERT INTO scheduling_history (` + codec.HistoryColumns + `)
SELECT session_id, at, handler, result, from_status, to_status, message, attempt
FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[])
     WITH ORDINALITY AS u(session_id, at, handler, result, from_status, to_status, message, attempt, n)
ORDER BY n`
	selectHistory  = `SELECT id, ` + codec.HistoryColumns + ` FROM scheduling_history WHERE session_id = $1 ORDER BY id`
	incrementTries = `INSERT INTO session_tries (session_id, phase, tries)
SELECT id, $2::text, 1 FROM unnest($1::text[]) AS u(id)
ON CONFLICT (session_id, phase) DO UPDATE SET tries = session_tries.tries + 1
RETURNING session_id, tries`
	resetTries  = `DELETE FROM session_tries WHERE phase = $1 AND session_id = ANY($2)`
	selectTries = `SELECT phase, tries FROM session_tries WHERE session_id = $1 ORDER BY phase`
)

// Seed 001's promotion checks; $1 are the session statuses, $2 the kernel
// statuses checked.
const (
	matchAny = `SELECT s.id FROM sessions s
WHERE s.status = ANY($1)
  AND EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id AND k.status = ANY($2))
ORDER BY s.id`
	matchNotAny = `SELECT s.id FROM sessions s
WHERE s.status = ANY($1)
  AND NOT EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id AND k.status = ANY($2))
ORDER BY s.id`
	matchAll = `SELECT s.id FROM sessions s
WHERE s.status = ANY($1)
  AND NOT EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id AND k.status <> ALL($2))
ORDER BY s.id`
)
