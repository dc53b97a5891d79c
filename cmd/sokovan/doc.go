// Command sokovan is the one Sokovan-Go binary: manager, agent, dev mode and
// the CLI verbs. It owns flag parsing and wiring only; behaviour lives in
// internal packages, which it may all import.
package main
