package sqlstore

import "github.com/sokovan-go/sokovan/internal/store/internal/codec"

// Query text is PostgreSQL's with the fragments Dialect lists. An optional
// filter is "({empty $n} OR col {in $n})" or "($n = '' OR col = $n)".
// Rows that will be written are locked with {lock}, always sessions before
// agents and each set in id order, so concurrent writers queue rather than
// deadlock.

// Status sets that hold resources (domain's HoldsResources); a test checks
// them against the domain package.
const (
	holdingKernelStatuses  = `('SCHEDULED', 'PREPARING', 'PULLING', 'PREPARED', 'CREATING', 'RUNNING', 'TERMINATING')`
	holdingSessionStatuses = `('SCHEDULED', 'PREPARING', 'PREPARED', 'CREATING', 'RUNNING', 'TERMINATING')`
)

const (
	// upsertGroup also brings a removed group's name back as a new group
	// (removed_at cleared): seed 003's Remove ends the object, not its name.
	upsertGroup = `INSERT INTO resource_groups (` + codec.GroupColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24,
    $25, $26)
ON CONFLICT (name) DO UPDATE SET
    state = excluded.state, sequencer = excluded.sequencer, selector = excluded.selector,
    head_of_line = excluded.head_of_line, max_retries = excluded.max_retries,
    pending_timeout_ns = excluded.pending_timeout_ns, scheduled_timeout_ns = excluded.scheduled_timeout_ns,
    preparing_timeout_ns = excluded.preparing_timeout_ns, prepared_timeout_ns = excluded.prepared_timeout_ns,
    creating_timeout_ns = excluded.creating_timeout_ns, terminating_timeout_ns = excluded.terminating_timeout_ns,
    allowed_types = excluded.allowed_types, default_slots = excluded.default_slots, min_slots = excluded.min_slots,
    default_time_limit_ns = excluded.default_time_limit_ns, max_time_limit_ns = excluded.max_time_limit_ns,
    idle_timeout_ns = excluded.idle_timeout_ns, reserve = excluded.reserve,
    reservation_depth = excluded.reservation_depth, preempt = excluded.preempt,
    preempt_min_runtime_ns = excluded.preempt_min_runtime_ns, preempt_budget = excluded.preempt_budget,
    preempt_window_ns = excluded.preempt_window_ns, fairshare_half_life_ns = excluded.fairshare_half_life_ns,
    fair_shares = excluded.fair_shares, removed_at = NULL`
	selectGroup  = `SELECT ` + codec.GroupColumns + ` FROM resource_groups WHERE name = $1 AND removed_at IS NULL`
	selectGroups = `SELECT ` + codec.GroupColumns + ` FROM resource_groups WHERE removed_at IS NULL ORDER BY name`
	// selectGroupStateShared reads a group's state for CreateSession,
	// keeping it from changing until the creation commits.
	selectGroupStateShared = `SELECT ` + groupState + ` FROM resource_groups WHERE name = $1 {share}`
	// A removed group keeps state DRAINING (see migration 00131); these
	// read its state as REMOVED.
	groupState             = `CASE WHEN removed_at IS NULL THEN state ELSE 'REMOVED' END`
	lockGroupForRemove     = `SELECT ` + groupState + ` FROM resource_groups WHERE name = $1 {lock}`
	countGroupLiveSessions = `SELECT COUNT(*) FROM sessions
WHERE resource_group = $1 AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR')`
	countGroupAgents  = `SELECT COUNT(*) FROM agents WHERE resource_group = $1 AND status IN ('ALIVE', 'LOST')`
	removeGroup       = `UPDATE resource_groups SET removed_at = $2 WHERE name = $1`
	selectGroupCursor = `SELECT rr_cursor FROM resource_groups WHERE name = $1`
	saveGroupCursor   = `UPDATE resource_groups SET rr_cursor = $1 WHERE name = $2`
	// A group's generation counts the changes to its scheduling input
	// that the change feed does not carry: its agents' status, cordon and
	// capacity, its configuration, policies. It is bumped after the row
	// it is about is written, so agents are locked before groups, as in
	// ApplyPlan.
	bumpGroup            = `UPDATE resource_groups SET generation = generation + 1 WHERE name = $1`
	bumpGroupOfAgent     = `UPDATE resource_groups SET generation = generation + 1 WHERE name = (SELECT resource_group FROM agents WHERE id = $1)`
	bumpAllGroups        = `UPDATE resource_groups SET generation = generation + 1`
	lockAgentForRegister = `SELECT resource_group, epoch FROM agents WHERE id = $1 {lock}`
	selectGenerations    = `SELECT name, generation FROM resource_groups`
)

const (
	registerAgent = `INSERT INTO agents (` + codec.AgentColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
ON CONFLICT (id) DO UPDATE SET
    resource_group = excluded.resource_group, address = excluded.address, catalog = excluded.catalog,
    architecture = excluded.architecture, runtime = excluded.runtime, status = 'ALIVE',
    capacity = excluded.capacity, max_kernels = excluded.max_kernels,
    last_heartbeat = excluded.last_heartbeat, epoch = agents.epoch + 1,
    images = excluded.images, labels = excluded.labels, allows_command = excluded.allows_command,
    devices = excluded.devices, kernel_address = excluded.kernel_address
RETURNING ` + codec.AgentColumns
	heartbeatAgent           = `UPDATE agents SET last_heartbeat = $1 WHERE id = $2 AND epoch = $3 AND status = 'ALIVE'`
	selectAgentEpoch         = `SELECT epoch FROM agents WHERE id = $1`
	selectAgentEpochStatus   = `SELECT epoch, status FROM agents WHERE id = $1`
	setAgentStatus           = `UPDATE agents SET status = $1 WHERE id = $2`
	setAgentSchedulable      = `UPDATE agents SET schedulable = $1 WHERE id = $2`
	lockAgentForRetire       = `SELECT status FROM agents WHERE id = $1 {lock}`
	countAgentHoldingKernels = `SELECT COUNT(*) FROM kernels WHERE agent_id = $1 AND status IN ` + holdingKernelStatuses
	retireAgent              = `UPDATE agents SET status = 'TERMINATED', schedulable = $2, epoch = epoch + 1 WHERE id = $1`
	setAgentCapacity         = `UPDATE agents SET capacity = $1 WHERE id = $2 AND epoch = $3 AND capacity <> $1`
	noteWaitingKernels       = `UPDATE kernels SET status_reason = u.reason
FROM {rows $2 u(id text, reason text)}
WHERE kernels.id = u.id AND kernels.agent_id = $1 AND kernels.status = 'CREATING' AND kernels.status_reason <> u.reason`
	selectAgent  = `SELECT ` + codec.AgentColumns + ` FROM agents WHERE id = $1`
	selectAgents = `SELECT ` + codec.AgentColumns + ` FROM agents
WHERE ($1 = '' OR resource_group = $1) AND ({empty $2} OR status {in $2})
  AND ({empty $3} OR id {in $3})
ORDER BY id`
	// The sweep's: of a thousand agents, the few gone quiet are all it
	// needs, and decoding the rest was its whole cost.
	selectSilentAgents = `SELECT ` + codec.AgentColumns + ` FROM agents
WHERE ($1 = '' OR resource_group = $1) AND ({empty $2} OR status {in $2})
  AND ({empty $3} OR id {in $3}) AND (last_heartbeat IS NULL OR last_heartbeat < $4)
ORDER BY id`
	selectGroupAgents = `SELECT ` + codec.AgentColumns + ` FROM agents WHERE resource_group = $1 ORDER BY id`
)

const (
	insertSession = `INSERT INTO sessions (` + codec.SessionSpecColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32)`
	insertKernel = `INSERT INTO kernels (` + codec.KernelColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`
	insertDependency = `INSERT INTO session_dependencies (session_id, depends_on) VALUES ($1, $2)`
	selectSession    = `SELECT ` + codec.SessionSpecColumns + ` FROM sessions WHERE id = $1`
	selectSpecs      = `SELECT ` + codec.SpecColumns + ` FROM sessions WHERE id {in $1}`
	// A listing is driven by the most selective filter it has: an
	// optional filter written "({empty $n} OR ...)" keeps the planner off
	// the index (SQLite scans every session, PostgreSQL's generic plan
	// too), and every cycle lists a few statuses among sessions that
	// mostly ended long ago. ListSessions puts together selectSessionsFrom,
	// one of the drivers and one of the orders. $6 is the limit and $8 the
	// page's cursor. The prefix is matched with substr, not LIKE, so no
	// character of it is a wildcard.
	selectSessionsFrom     = `SELECT ` + codec.SessionColumns + ` FROM sessions WHERE `
	sessionsDrivenByID     = `id {in $7} AND `
	sessionsDrivenByStatus = `status {in $1} AND `
	sessionsFilter         = `({empty $1} OR status {in $1})
  AND ($2 = '' OR owner_user = $2)
  AND ($3 = '' OR owner_project = $3)
  AND ($4 = '' OR owner_domain = $4)
  AND ($5 = '' OR resource_group = $5)
  AND ({empty $7} OR id {in $7})
  AND ($9 = '' OR name = $9)
  AND ($10 = '' OR substr(id, 1, length($10)) = $10)
  AND ({empty $11} OR type {in $11})
  AND (status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR') OR status_changed_at >= $12)`
	sessionsOldest = sessionsFilter + `
  AND ($8 = '' OR (created_at, id) > (SELECT created_at, id FROM sessions WHERE id = $8))
ORDER BY created_at, id
LIMIT CAST($6 AS BIGINT)`
	sessionsNewest = sessionsFilter + `
  AND ($8 = '' OR (created_at, id) < (SELECT created_at, id FROM sessions WHERE id = $8))
ORDER BY created_at DESC, id DESC
LIMIT CAST($6 AS BIGINT)`
	// Only asked for a name; name <> '' lets SQLite see that the partial
	// index sessions_live_name covers the query, rather than walking all
	// of the owner's sessions.
	countLiveNamed = `SELECT COUNT(*) FROM sessions
WHERE owner_user = $1 AND name = $2 AND name <> '' AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR')`
	// A name is live on a live session of its own, or on an array with
	// a live element.
	countLiveNamedOrArray = `SELECT (SELECT COUNT(*) FROM sessions
WHERE owner_user = $1 AND name = $2 AND name <> '' AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR'))
 + (SELECT COUNT(*) FROM session_arrays a JOIN sessions e ON e.array_id = a.id
WHERE a.owner_user = $1 AND a.name = $2 AND e.status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR'))`
	selectDependencies = `SELECT session_id, depends_on FROM session_dependencies
WHERE session_id {in $1} ORDER BY session_id, depends_on`
	selectSessionKernels = `SELECT ` + codec.KernelColumns + ` FROM kernels WHERE session_id = $1 ORDER BY cluster_idx`
	// Driven by the most selective filter, as the session listing is.
	selectKernels          = `SELECT ` + codec.KernelColumns + ` FROM kernels WHERE ` + kernelsFilter
	selectKernelsByID      = `SELECT ` + codec.KernelColumns + ` FROM kernels WHERE id {in $4} AND ` + kernelsFilter
	selectKernelsBySession = `SELECT ` + codec.KernelColumns + ` FROM kernels WHERE session_id {in $1} AND ` + kernelsFilter
	selectKernelsByAgent   = `SELECT ` + codec.KernelColumns + ` FROM kernels WHERE agent_id {in $2} AND ` + kernelsFilter
	selectKernelsByStatus  = `SELECT ` + codec.KernelColumns + ` FROM kernels WHERE status {in $3} AND ` + kernelsFilter
	kernelsFilter          = `({empty $1} OR session_id {in $1})
  AND ({empty $2} OR agent_id {in $2})
  AND ({empty $3} OR status {in $3})
  AND ({empty $4} OR id {in $4})
ORDER BY session_id, cluster_idx`
	// A limit counts no further than its maximum ($2), so a large
	// project's or domain's queue is not walked to the end.
	countPendingOfUser = `SELECT COUNT(*) FROM (SELECT 1 FROM sessions
WHERE status = 'PENDING' AND owner_user = $1 LIMIT CAST($2 AS BIGINT)) p`
	countPendingOfProject = `SELECT COUNT(*) FROM (SELECT 1 FROM sessions
WHERE status = 'PENDING' AND owner_project = $1 LIMIT CAST($2 AS BIGINT)) p`
	countPendingOfDomain = `SELECT COUNT(*) FROM (SELECT 1 FROM sessions
WHERE status = 'PENDING' AND owner_domain = $1 LIMIT CAST($2 AS BIGINT)) p`
	selectKernel      = `SELECT ` + codec.KernelColumns + ` FROM kernels WHERE id = $1`
	lockAvoidAgents   = `SELECT avoid_agents FROM sessions WHERE id = $1 {lock}`
	updateAvoidAgents = `UPDATE sessions SET avoid_agents = $1 WHERE id = $2`
)

const (
	insertUser    = `INSERT INTO users (` + codec.UserColumns + `) VALUES ($1, $2, $3, $4, $5, $6)`
	insertToken   = `INSERT INTO tokens (hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`
	deleteTokens  = `DELETE FROM tokens WHERE user_id = $1`
	lockUser      = `UPDATE users SET id = id WHERE id = $1`
	selectUsers   = `SELECT ` + codec.UserColumns + ` FROM users ORDER BY name`
	selectByToken = `SELECT ` + codec.UserColumns + `, (SELECT expires_at FROM tokens WHERE hash = $1) FROM users
		WHERE id = (SELECT user_id FROM tokens WHERE hash = $1)`
	upsertPolicy = `INSERT INTO policies (` + codec.PolicyColumns + `) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (scope, name) DO UPDATE SET
    max_slots = excluded.max_slots, max_concurrent_sessions = excluded.max_concurrent_sessions,
    max_pending_sessions = excluded.max_pending_sessions`
	selectPolicy = `SELECT ` + codec.PolicyColumns + ` FROM policies WHERE scope = $1 AND name = $2`
)

// Snapshot reads; $1 is always the group.
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
	// Sums run over base-unit integers, so they are exact.
	selectUsageSlots = `SELECT s.owner_user, s.owner_project, s.owner_domain, s.resource_group = $1, e.key,
       CAST(SUM(CAST(e.value AS BIGINT)) AS BIGINT)
FROM kernels k JOIN sessions s ON s.id = k.session_id CROSS JOIN {pairs k.requested} e
WHERE k.status IN ` + holdingKernelStatuses + `
GROUP BY s.owner_user, s.owner_project, s.owner_domain, s.resource_group = $1, e.key`
	selectHeldByUser = `SELECT s.owner_user, e.key, CAST(SUM(CAST(e.value AS BIGINT)) AS BIGINT)
FROM kernels k JOIN sessions s ON s.id = k.session_id CROSS JOIN {pairs k.requested} e
WHERE k.status IN ` + holdingKernelStatuses + `
GROUP BY s.owner_user, e.key`
	selectUsageCounts = `SELECT owner_user, owner_project, owner_domain, COUNT(*) FROM sessions
WHERE status IN ` + holdingSessionStatuses + `
GROUP BY owner_user, owner_project, owner_domain`
	// Reservations plan from when the group's kernels free their slots;
	// only a group in head-of-line reserve reads them. The agent index
	// narrows the scan to the group's agents.
	selectGroupHoldings = `SELECT ` + codec.HoldingColumns + `
FROM kernels k JOIN sessions s ON s.id = k.session_id
WHERE k.agent_id IN (SELECT id FROM agents WHERE resource_group = $1)
  AND k.status IN ` + holdingKernelStatuses + `
  AND EXISTS (SELECT 1 FROM resource_groups g WHERE g.name = $1 AND (g.reserve = 1 OR g.preempt = 1))
ORDER BY k.id`
	selectPendingPolicies = `SELECT ` + codec.PolicyColumns + ` FROM policies
WHERE (scope = 'user' AND name IN (SELECT owner_user FROM sessions WHERE resource_group = $1 AND status = 'PENDING'))
   OR (scope = 'project' AND name IN (SELECT owner_project FROM sessions WHERE resource_group = $1 AND status = 'PENDING'))
   OR (scope = 'domain' AND name IN (SELECT owner_domain FROM sessions WHERE resource_group = $1 AND status = 'PENDING'))`
)

// Plan application and transitions.
const (
	lockPlanSessions = `SELECT id, status, resource_group FROM sessions
WHERE id {in $1} ORDER BY id {lock}`
	selectPlanKernels = `SELECT id, session_id, status, requested FROM kernels WHERE session_id {in $1}`
	lockPlanAgents    = `SELECT id, resource_group, status, schedulable, capacity, occupied, kernel_count, max_kernels, devices
FROM agents WHERE id {in $1} ORDER BY id {lock}`
	// selectHeldDevices reads the device grants of the kernels that hold
	// resources on the given agents; what a device has free is derived
	// from them, never stored.
	selectHeldDevices = `SELECT agent_id, devices FROM kernels
WHERE agent_id {in $1} AND status IN ` + holdingKernelStatuses + ` AND devices <> '[]'`
	selectGroupHeldDevices = `SELECT k.agent_id, k.devices FROM kernels k JOIN agents a ON a.id = k.agent_id
WHERE a.resource_group = $1 AND a.devices <> '[]' AND k.status IN ` + holdingKernelStatuses + ` AND k.devices <> '[]'`
	scheduleSessions = `UPDATE sessions SET status = 'SCHEDULED', status_reason = '', status_changed_at = $1
WHERE id {in $2} AND status = 'PENDING'`
	scheduleKernels = `UPDATE kernels
SET status = 'SCHEDULED', status_reason = '', status_changed_at = $1, agent_id = u.agent, devices = u.devices
FROM {rows $2 u(id text, agent text, devices text)}
WHERE kernels.id = u.id AND kernels.status = 'PENDING'`
	writeOccupancy = `UPDATE agents SET occupied = u.occupied, kernel_count = u.kernels
FROM {rows $1 u(id text, occupied jsonb, kernels int)}
WHERE agents.id = u.id`
	lockOccupancy = `SELECT id, occupied, kernel_count FROM agents WHERE id {in $1} ORDER BY id {lock}`

	lockGuardSessions = `SELECT id, status, created_at FROM sessions WHERE id {in $1} AND status {in $2}
ORDER BY id {lock}`
	// lockGuardRequeue is lockGuardSessions for a move back to PENDING: a
	// session with a kernel that already ended cannot start over, because
	// that kernel cannot follow it (DESIGN.md invariant 2).
	lockGuardRequeue = `SELECT id, status, created_at FROM sessions s WHERE id {in $1} AND status {in $2}
  AND NOT EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id
                  AND k.status IN ('TERMINATED', 'CANCELLED', 'ERROR'))
ORDER BY id {lock}`
	// A move that gives no reason out of TERMINATING (the promotion to
	// TERMINATED once the kernels are gone) keeps the one the session was
	// ended for: a cancel, a time limit, a drain deadline, a preemption.
	// That reason is what show and why answer for an ended session.
	moveSessions = `UPDATE sessions SET status = $1,
    status_reason = CASE WHEN $2 = '' AND status = 'TERMINATING' THEN status_reason ELSE $2 END,
    status_changed_at = $3
WHERE id {in $4}`
	selectMovableKernels = `SELECT id, agent_id, status, requested FROM kernels
WHERE session_id {in $1} AND status {in $2}`
	moveKernels = `UPDATE kernels
SET status = $1, status_reason = $2, status_changed_at = $3,
    agent_id = CASE WHEN $1 = 'PENDING' THEN NULL ELSE agent_id END,
    devices = CASE WHEN $1 = 'PENDING' THEN '[]' ELSE devices END
WHERE id {in $4}`
	// A session that ends records how: success only when every kernel
	// terminated with exit code 0 (domain.Outcome).
	// An outcome already set while the session ran stands: a failure when
	// the coordinator ended it (time limit, idleness: kernels killed for
	// it may still exit 0), or the one judged from the kernels that had
	// ended when it began ending because they did (judgeEnded: the others
	// were destroyed for it).
	setOutcome = `UPDATE sessions SET outcome = CASE
    WHEN outcome IN ('failure', 'success') THEN outcome
    WHEN status = 'CANCELLED' THEN 'cancelled'
    WHEN status = 'ERROR' THEN 'failure'
    WHEN EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = sessions.id
                 AND (k.status <> 'TERMINATED' OR k.exit_code IS NULL OR k.exit_code <> 0)) THEN 'failure'
    ELSE 'success' END
WHERE id {in $1} AND status IN ('TERMINATED', 'CANCELLED', 'ERROR')`
	// judgeEnded fixes the outcome of sessions that began ending because
	// some of their kernels ended (domain.Transition.Judge), from those
	// kernels alone: the ones still live are destroyed for it.
	judgeEnded = `UPDATE sessions SET outcome = CASE
    WHEN EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = sessions.id
                 AND k.status IN ('TERMINATED', 'CANCELLED', 'ERROR')
                 AND (k.status <> 'TERMINATED' OR k.exit_code IS NULL OR k.exit_code <> 0)) THEN 'failure'
    ELSE 'success' END
WHERE id {in $1} AND outcome = ''`
	lockKernelSession = `SELECT id FROM sessions WHERE id = (SELECT session_id FROM kernels WHERE id = $1) {lock}`
	updateKernel      = `UPDATE kernels
SET status = $1, status_reason = $2, status_changed_at = $3, exit_code = COALESCE($4, exit_code),
    container_id = CASE WHEN $5 = '' THEN container_id ELSE $5 END,
    service_ports = CASE WHEN $8 = '' THEN service_ports ELSE $8 END,
    agent_id = CASE WHEN $1 = 'PENDING' THEN NULL ELSE agent_id END
WHERE id = $6 AND status = $7`
)

const (
	lockSessions      = `SELECT id FROM sessions WHERE id {in $1} ORDER BY id {lock}`
	selectLastHistory = `SELECT id, ` + codec.HistoryColumns + ` FROM scheduling_history
WHERE id IN (SELECT MAX(id) FROM scheduling_history WHERE session_id {in $1} GROUP BY session_id)`
	mergeHistory = `UPDATE scheduling_history SET attempt = u.attempt, at = u.at
FROM {rows $1 u(id bigint, attempt int, at timestamptz)}
WHERE scheduling_history.id = u.id`
	// Rows are inserted in the batch's order, so the ids they get keep it.
	insertHistory = `INSERT INTO scheduling_history (` + codec.HistoryColumns + `)
SELECT u.session_id, u.at, u.handler, u.result, u.from_status, u.to_status, u.message, u.attempt
FROM {rows $1 u(session_id text, at timestamptz, handler text, result text, from_status text, to_status text, message text, attempt int)}
ORDER BY u.n`
	selectHistory = `SELECT id, ` + codec.HistoryColumns + ` FROM scheduling_history WHERE session_id = $1 ORDER BY id`
	// WHERE true keeps SQLite from reading ON CONFLICT as a join's ON.
	incrementTries = `INSERT INTO session_tries (session_id, phase, tries)
SELECT u.id, CAST($2 AS TEXT), 1 FROM {rows $1 u(id text)} WHERE true
ON CONFLICT (session_id, phase) DO UPDATE SET tries = session_tries.tries + 1
RETURNING session_id, tries`
	resetTries  = `DELETE FROM session_tries WHERE phase = $1 AND session_id {in $2}`
	selectTries = `SELECT phase, tries FROM session_tries WHERE session_id = $1 ORDER BY phase`
)

// Seed 001's promotion checks: matchFrom, then matchAmong when the check
// is narrowed to given sessions ($3; driven by the primary key rather than
// by every session in the statuses), then one of the conditions. $1 are
// the session statuses, $2 the kernel statuses checked.
const (
	matchFrom  = `SELECT s.id FROM sessions s WHERE `
	matchAmong = `s.id {in $3} AND `
	matchAny   = `s.status {in $1}
  AND EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id AND k.status {in $2})
ORDER BY s.id`
	matchNotAny = `s.status {in $1}
  AND NOT EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id AND k.status {in $2})
ORDER BY s.id`
	matchAll = `s.status {in $1}
  AND NOT EXISTS (SELECT 1 FROM kernels k WHERE k.session_id = s.id AND k.status {not in $2})
ORDER BY s.id`
)

// The change feed, by position; PostgreSQL's rows may wait for one (see
// ChangeNumberer), so only numbered rows are read or pruned.
const (
	selectChanges = `SELECT {pos}, ` + codec.ChangeColumns + ` FROM status_changes
WHERE {pos} > $1
  AND ($2 = '' OR owner_user = $2)
  AND ({empty $3} OR session_id {in $3})
ORDER BY {pos}
LIMIT CAST($4 AS BIGINT)`
	selectLastChange = `SELECT COALESCE(MAX({pos}), 0) FROM status_changes`
	// Never the highest position: numbering continues after it, and it
	// must not go back. Nor past the usage rollup's position once it has
	// started: a hold whose end was pruned unread would be credited on
	// for ever. Walks the position index from the oldest row to the first
	// young one, so its cost is the number of rows it deletes.
	pruneChanges = `DELETE FROM status_changes WHERE {pos} IS NOT NULL AND {pos} < COALESCE(
    (SELECT {pos} FROM status_changes WHERE {pos} IS NOT NULL AND at >= $1 ORDER BY {pos} LIMIT 1),
    (SELECT MAX({pos}) FROM status_changes))
  AND {pos} <= COALESCE((SELECT w.pos FROM usage_watermark w WHERE w.id = 1 AND w.rolled_at IS NOT NULL), {pos})`
)

// Utilisation samples. Only ALIVE agents count, toward capacity and
// occupancy alike: a LOST agent's slots cannot be used, and counting what
// its kernels held against capacity it no longer offers could put a group
// above 100%. The two slot vectors are read as one set of (slot, capacity,
// occupied) rows so a slot occupied but not offered (a shrunk agent) still
// shows. Sampling twice at one time keeps the later sample.
const (
	recordUtilisation = `INSERT INTO utilisation_samples (resource_group, at, slot, capacity, occupied)
SELECT u.resource_group, $1, u.slot, CAST(SUM(u.capacity) AS BIGINT), CAST(SUM(u.occupied) AS BIGINT)
FROM (
    SELECT a.resource_group, e.key AS slot, CAST(e.value AS BIGINT) AS capacity, CAST(0 AS BIGINT) AS occupied
    FROM agents a CROSS JOIN {pairs a.capacity} e WHERE a.status = 'ALIVE'
    UNION ALL
    SELECT a.resource_group, e.key, CAST(0 AS BIGINT), CAST(e.value AS BIGINT)
    FROM agents a CROSS JOIN {pairs a.occupied} e WHERE a.status = 'ALIVE'
) u
GROUP BY u.resource_group, u.slot
ON CONFLICT (resource_group, at, slot) DO UPDATE SET capacity = excluded.capacity, occupied = excluded.occupied`
	// The step a sample falls in is counted from $3 (from, in
	// microseconds) in steps of $4 microseconds; both engines divide
	// integers exactly, and at >= from keeps the quotient non-negative.
	selectUtilisation = `SELECT ({micros at} - $3) / $4 AS step, slot,
       CAST(AVG(capacity) AS DOUBLE PRECISION), CAST(AVG(occupied) AS DOUBLE PRECISION), COUNT(*)
FROM utilisation_samples
WHERE resource_group = $1 AND at >= $2 AND at < $5
GROUP BY step, slot
ORDER BY step, slot`
	pruneUtilisation = `DELETE FROM utilisation_samples WHERE at < $1`
)
