// Package clock is the one time source the manager's parts read: the
// coordinator, the deployment controller, admission, the API and the
// sampler take a Clock, the wall clock in production and a Manual one in
// tests that move time by hand. The sim runtime's clock, which also
// fires timers, extends this one.
//
// It imports the standard library alone, so any package may import it.
//
// Imports: none.
package clock
