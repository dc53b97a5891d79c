package domain

import "time"

// Record is one entry in the history of a session, a job or a deployment:
// the one shape the three share, so that storing, merging and showing a
// history is written once. ID names the subject's kind, S its states, C
// what moves it (a handler, or a job's event) and R the outcome's kind.
type Record[ID ~string, S comparable, C ~string, R ~string] struct {
	Subject ID
	// Route is the deployment route the entry is about; empty for the
	// deployment itself and for sessions and jobs.
	Route   RouteID
	At      time.Time
	Cause   C
	Result  R
	From    S
	To      S
	Message string
	// Attempt counts consecutive identical outcomes merged into this
	// entry; at least 1 once stored where the history merges repeats.
	Attempt int
}

// Repeats reports whether r is the same outcome for the same subject as
// prev, which a history merges into prev instead of adding (seed 001:
// "merge repeats"). Time and attempts are not part of the outcome.
func (r Record[ID, S, C, R]) Repeats(prev Record[ID, S, C, R]) bool {
	return r.Subject == prev.Subject && r.Route == prev.Route && r.Cause == prev.Cause &&
		r.Result == prev.Result && r.From == prev.From && r.To == prev.To && r.Message == prev.Message
}
