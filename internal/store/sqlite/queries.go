package sqlite

import "github.com/sokovan-go/sokovan/internal/store/internal/codec"

// Lists travel as one JSON array parameter and are read with json_each, so
// statement texts stay fixed and are not limited by SQLite's variable
// count. An optional filter is "? = '[]' OR col IN (...)" or
// "? = '' OR col = ?".

// Status sets that hold resources (domain's HoldsResources); a test checks
// them against the domain package.
const (
	holdingKernelStatuses  = `('SCHEDULED', 'PREPARING', 'PULLING', 'PREPARED', 'CREATING', 'RUNNING', 'TERMINATING')`
	holdingSessionStatuses = `('SCHEDULED', 'PREPARING', 'PREPARED', 'CREATING', 'RUNNING', 'TERMINATING')`
)

const (
	upsertGroup = `INSERT INTO resource_groups (` + codec.GroupColumns + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET
    state = excluded.state, sequencer = excluded.sequencer, selector = excluded.selector,
    head_of_line = excluded.head_of_line, max_retries = excluded.max_retries,
    pending_timeout_ns = excluded.pending_timeout_ns, scheduled_timeout_ns = excluded.scheduled_timeout_ns,
    preparing_timeout_ns = excluded.preparing_timeout_ns, prepared_timeout_ns = excluded.prepared_timeout_ns,
    creating_timeout_ns = excluded.creating_timeout_ns, terminating_timeout_ns = excluded.terminating_timeout_ns,
    allowed_types = excluded.allowed_types, default_slots = excluded.default_slots, min_slots = excluded.min_slots`
	selectGroup       = `SELECT ` + codec.GroupColumns + ` FROM resource_groups WHERE name = ?`
	selectGroups      = `SELECT ` + codec.GroupColumns + ` FROM resource_groups ORDER BY name`
	selectGroupCursor = `SELECT rr_cursor FROM resource_groups WHERE name = ?`
	saveGroupCursor   = `UPDATE resource_groups SET rr_cursor = ? WHERE name = ?`
)

const (
	registerAgent = `INSERT INTO agents (` + codec.AgentColumns + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
    resource_group = excluded.resource_group, address = excluded.address,
    architecture = excluded.architecture, runtime = excluded.runtime, status = 'ALIVE',
    capacity = excluded.capacity, max_kernels = excluded.max_kernels,
    last_heartbeat = excluded.last_heartbeat, epoch = agents.epoch + 1,
    images = excluded.images, labels = excluded.labels
RETURNING ` + codec.AgentColumns
	selectAgentEpoch    = `SELECT epoch FROM agents WHERE id = ?`
	heartbeatAgent      = `UPDATE agents SET last_heartbeat = ? WHERE id = ? AND epoch = ?`
	setAgentStatus      = `UPDATE agents SET status = ? WHERE id = ?`
	setAgentSchedulable = `UPDATE agents SET schedulable = ? WHERE id = ?`
	selectAgent         = `SELECT ` + codec.AgentColumns + ` FROM agents WHERE id = ?`
	selectAgents        = `SELECT ` + codec.AgentColumns + ` FROM agents
WHERE (?1 = '' OR resource_group = ?1)
  AND (?2 = '[]' OR status IN (SELECT value FROM json_each(?2)))
  AND (?3 = '[]' OR id IN (SELECT value FROM json_each(?3)))
ORDER BY id`
	selectGroupAgents = `SELECT ` + codec.AgentColumns + ` FROM agents WHERE resource_group = ? ORDER BY id`
)

const (
	insertSession    = `INSERT INTO sessions (` + codec.SessionColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertKernel     = `INSERT INTO kernels (` + codec.KernelColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertDependency = `INSERT INTO session_dependencies (session_id, depends_on) VALUES (?, ?)`
	selectSession    = `SELECT ` + codec.SessionColumns + ` FROM sessions WHERE id = ?`
	selectSessions   = `SELECT ` + codec.SessionColumns + ` FROM sessions
WHERE (?1 = '[]' OR status IN (SELECT value FROM json_each(?1)))
  AND (?2 = '' OR owner_user = ?2)
  AND (?3 = '' OR owner_project = ?3)
  AND (?4 = '' OR owner_domain = ?4)
  AND (?5 = '' OR resource_group = ?5)
  AND (?7 = '[]' OR id IN (SELECT value FROM json_each(?7)))
ORDER BY created_at, id
LIMIT ?6`
	selectDependencies = `SELECT session_id, depends_on FROM session_dependencies
WHERE session_id IN (SELECT value FROM json_each(?))
ORDER BY session_id, depends_on`
	selectSessionKernels = `SELECT ` + codec.KernelColumns + ` FROM kernels WHERE session_id = ? ORDER BY cluster_idx`
	selectKernels        = `SELECT ` + codec.KernelColumns + ` FROM kernels
WHERE (?1 = '[]' OR session_id IN (SELECT value FROM json_each(?1)))
  AND (?2 = '[]' OR agent_id IN (SELECT value FROM json_each(?2)))
  AND (?3 = '[]' OR status IN (SELECT value FROM json_each(?3)))
  AND (?4 = '[]' OR id IN (SELECT value FROM json_each(?4)))
ORDER BY session_id, cluster_idx`
	selectKernel      = `SELECT ` + codec.KernelColumns + ` FROM kernels WHERE id = ?`
	selectAvoidAgents = `SELECT avoid_agents FROM sessions WHERE id = ?`
	updateAvoidAgents = `UPDATE sessions SET avoid_agents = ? WHERE id = ?`
)

const (
	insertUser    = `INSERT INTO users (` + codec.UserColumns + `) VALUES (?, ?, ?, ?, ?, ?)`
	insertToken   = `INSERT INTO tokens (hash, user_id, created_at) VALUES (?, ?, ?)`
	selectByToken = `SELECT ` + codec.UserColumns + ` FROM users WHERE id = (SELECT user_id FROM tokens WHERE hash = ?)`
	upsertPolicy  = `INSERT INTO policies (` + codec.PolicyColumns + `) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (scope, name) DO UPDATE SET
    max_slots = excluded.max_slots, max_concurrent_sessions = excluded.max_concurrent_sessions,
    max_pending_sessions = excluded.max_pending_sessions`
	selectPolicy = `SELECT ` + codec.PolicyColumns + ` FROM policies WHERE scope = ? AND name = ?`
)

// Snapshot reads; ?1 is always the group.
const (
	pendingInGroup       = `SELECT id FROM sessions WHERE resource_group = ?1 AND status = 'PENDING'`
	selectPendingOfGroup = `SELECT ` + codec.SessionColumns + ` FROM sessions
WHERE resource_group = ?1 AND status = 'PENDING' ORDER BY created_at, id`
	selectPendingKernels = `SELECT ` + codec.KernelColumns + ` FROM kernels
WHERE session_id IN (` + pendingInGroup + `) ORDER BY session_id, cluster_idx`
	selectPendingDependencies = `SELECT d.session_id, d.depends_on, dep.status, dep.outcome
FROM session_dependencies d JOIN sessions dep ON dep.id = d.depends_on
WHERE d.session_id IN (` + pendingInGroup + `)
ORDER BY d.session_id, d.depends_on`
	// Sums run over base-unit integers, so they are exact.
	selectUsageSlots = `SELECT s.owner_user, s.owner_project, s.owner_domain, s.resource_group = ?1, e.key,
       SUM(CAST(e.value AS INTEGER))
FROM kernels k JOIN sessions s ON s.id = k.session_id, json_each(k.requested) e
WHERE k.status IN ` + holdingKernelStatuses + `
GROUP BY s.owner_user, s.owner_project, s.owner_domain, s.resource_group = ?1, e.key`
	selectUsageCounts = `SELECT owner_user, owner_project, owner_domain, COUNT(*) FROM sessions
WHERE status IN ` + holdingSessionStatuses + `
GROUP BY owner_user, owner_project, owner_domain`
	selectPendingPolicies = `SELECT ` + codec.PolicyColumns + ` FROM policies
WHERE (scope = 'user' AND name IN (SELECT owner_user FROM sessions WHERE resource_group = ?1 AND status = 'PENDING'))
   OR (scope = 'project' AND name IN (SELECT owner_project FROM sessions WHERE resource_group = ?1 AND status = 'PENDING'))
   OR (scope = 'domain' AND name IN (SELECT owner_domain FROM sessions WHERE resource_group = ?1 AND status = 'PENDING'))`
)

// Plan application and transitions. Pairs and triples travel as a JSON
// array of arrays.
const (
	selectPlanSessions = `SELECT id, status, resource_group FROM sessions
WHERE id IN (SELECT value FROM json_each(?))`
	selectPlanKernels = `SELECT id, session_id, status, requested FROM kernels
WHERE session_id IN (SELECT value FROM json_each(?))`
	selectPlanAgents = `SELECT id, resource_group, status, schedulable, capacity, occupied, kernel_count, max_kernels
FROM agents WHERE id IN (SELECT value FROM json_each(?))`
	scheduleSessions = `UPDATE sessions SET status = 'SCHEDULED', status_reason = '', status_changed_at = ?1
WHERE id IN (SELECT value FROM json_each(?2)) AND status = 'PENDING'`
	// [[kernel, agent], ...]
	scheduleKernels = `UPDATE kernels
SET status = 'SCHEDULED', status_reason = '', status_changed_at = ?1, agent_id = json_extract(p.value, '$[1]')
FROM json_each(?2) p
WHERE kernels.id = json_extract(p.value, '$[0]') AND kernels.status = 'PENDING'`
	// [[agent, occupied JSON text, kernel count], ...]
	writeOccupancy = `UPDATE agents
SET occupied = json_extract(p.value, '$[1]'), kernel_count = json_extract(p.value, '$[2]')
FROM json_each(?1) p
WHERE agents.id = json_extract(p.value, '$[0]')`
	selectOccupancy = `SELECT id, occupied, kernel_count FROM agents WHERE id IN (SELECT value FROM json_each(?))`

	guardSessions = `SELECT id FROM sessions
WHERE id IN (SELECT value FROM json_each(?1)) AND status IN (SELECT value FROM json_each(?2))
ORDER BY id`
	// guardRequeue is guardSessions for a move back to PENDING: a session
	// with a kernel that already ended cannot start over, because that
	// kernel cannot follow it (DESIGN.md invariant 2).
	guardRequeue = `SELECT id FROM sessions
WHERE id IN (SELECT value FROM json_each(?1)) AND status IN (SELECT value FROM json_each(?2))
  AND NOT EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = sessions.id
                  AND k.status IN ('TERMINATED', 'CANCELLED', 'ERROR'))
ORDER BY id`
	moveSessions = `UPDATE sessions SET status = ?1, status_reason = ?2, status_changed_at = ?3
WHERE id IN (SELECT value FROM json_each(?4))`
	selectMovableKernels = `SELECT id, agent_id, status, requested FROM kernels
WHERE session_id IN (SELECT value FROM json_each(?1)) AND status IN (SELECT value FROM json_each(?2))`
	moveKernels = `UPDATE kernels
SET status = ?1, status_reason = ?2, status_changed_at = ?3,
    agent_id = CASE WHEN ?1 = 'PENDING' THEN NULL ELSE agent_id END
WHERE id IN (SELECT value FROM json_each(?4))`
	// A session that ends records how: success only when every kernel
	// terminated with exit code 0 (domain.Outcome).
	setOutcome = `UPDATE sessions SET outcome = CASE
    WHEN status = 'CANCELLED' THEN 'cancelled'
    WHEN status = 'ERROR' THEN 'failure'
    WHEN EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = sessions.id
                 AND (k.status <> 'TERMINATED' OR k.exit_code IS NULL OR k.exit_code <> 0)) THEN 'failure'
    ELSE 'success' END
WHERE id IN (SELECT value FROM json_each(?)) AND status IN ('TERMINATED', 'CANCELLED', 'ERROR')`
	updateKernel = `UPDATE kernels
SET status = ?1, status_reason = ?2, status_changed_at = ?3, exit_code = COALESCE(?4, exit_code),
    container_id = CASE WHEN ?5 = '' THEN container_id ELSE ?5 END,
    agent_id = CASE WHEN ?1 = 'PENDING' THEN NULL ELSE agent_id END
WHERE id = ?6 AND status = ?7`
)

const (
	selectLastHistory = `SELECT id, ` + codec.HistoryColumns + ` FROM scheduling_history
WHERE id IN (SELECT MAX(id) FROM scheduling_history
             WHERE session_id IN (SELECT value FROM json_each(?)) GROUP BY session_id)`
	mergeHistory   = `UPDATE scheduling_history SET attempt = ?, at = ? WHERE id = ?`
	insertHistory  = `INSERT INTO scheduling_history (` + codec.HistoryColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	selectHistory  = `SELECT id, ` + codec.HistoryColumns + ` FROM scheduling_history WHERE session_id = ? ORDER BY id`
	incrementTries = `INSERT INTO session_tries (session_id, phase, tries)
SELECT value, ?2, 1 FROM json_each(?1) WHERE true
ON CONFLICT (session_id, phase) DO UPDATE SET tries = tries + 1
RETURNING session_id, tries`
	resetTries  = `DELETE FROM session_tries WHERE phase = ?1 AND session_id IN (SELECT value FROM json_each(?2))`
	selectTries = `SELECT phase, tries FROM session_tries WHERE session_id = ? ORDER BY phase`
)

// Seed 001's promotion checks; ?1 are the session statuses, ?2 the kernel
// statuses checked.
const (
	matchAny = `SELECT s.id FROM sessions s
WHERE s.status IN (SELECT value FROM json_each(?1))
  AND EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id AND k.status IN (SELECT value FROM json_each(?2)))
ORDER BY s.id`
	matchNotAny = `SELECT s.id FROM sessions s
WHERE s.status IN (SELECT value FROM json_each(?1))
  AND NOT EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id AND k.status IN (SELECT value FROM json_each(?2)))
ORDER BY s.id`
	matchAll = `SELECT s.id FROM sessions s
WHERE s.status IN (SELECT value FROM json_each(?1))
  AND NOT EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id AND k.status NOT IN (SELECT value FROM json_each(?2)))
ORDER BY s.id`
)
