// Package validate holds the scheduler's Validator plugins: resource-group
// state, session type, start time, dependencies, slot quotas (user, project,
// domain), concurrency caps and an array's cap on its elements running at
// once (SLURM's %N). Each turns a reason not to place a session
// into a typed framework.Blocker, marked impossible only when waiting cannot
// help.
//
// It may import internal/domain and internal/scheduler/framework only.
//
// Imports: internal/domain, internal/scheduler/framework.
package validate
