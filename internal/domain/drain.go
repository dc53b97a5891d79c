package domain

import "time"

// AgentDrain is an agent being drained, as Nomad's `node drain -deadline`:
// nothing new is placed there, sessions may end on their own until
// Deadline, and after it the coordinator terminates what remains.
type AgentDrain struct {
	Agent   AgentID
	Started time.Time
	// Deadline is zero when the drain waits for sessions to end however
	// long they take.
	Deadline time.Time
}

// Due reports whether the deadline has passed, so what still runs on the
// agent is to be terminated.
func (d AgentDrain) Due(now time.Time) bool {
	return !d.Deadline.IsZero() && !now.Before(d.Deadline)
}
