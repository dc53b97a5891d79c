// Command sokovan is the one Sokovan-Go binary: manager, agent, dev mode and
// the CLI verbs. It owns flag parsing and wiring only; behaviour lives in
// internal packages, which it may all import.
//
// The client verbs speak API v1 in package v1's types (internal/api/v1),
// the ones the server writes, so what they decode cannot drift from what
// is sent. With -o json they print the answer as it came, every field.
// `session logs -f` follows by polling the logs endpoint with an offset
// (cli_logs.go says why), and `session port-forward` serves a session's
// port locally through the manager's proxy (cli_ports.go).
// They pass session references (id, id prefix or name) through to the
// manager, which resolves them, so the CLI and the API agree on what a
// name means.
//
// Imports: internal/..., github.com/spf13/cobra, github.com/spf13/pflag, golang.org/x/sys/unix, go.yaml.in/yaml/v3.
package main
