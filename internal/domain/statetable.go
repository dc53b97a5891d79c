package domain

import "fmt"

// nextState is the one lookup of the object state tables (resource
// groups', jobs'): the row for (e, from) says where it goes, and an event
// the table has no row for is illegal, reported as illegal wrapped.
func nextState[R any, E comparable, S interface {
	comparable
	fmt.Stringer
}](rows []R, row func(R) (E, S, S), e E, from S, illegal error) (S, error) {
	for _, r := range rows {
		if ev, f, to := row(r); ev == e && f == from {
			return to, nil
		}
	}
	var none S
	return none, fmt.Errorf("%w: %v from %s", illegal, e, from)
}
