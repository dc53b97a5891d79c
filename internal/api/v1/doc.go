// Package v1 is API v1 on the wire: every request body, answer, error
// body and event the manager's HTTP API reads or writes, as Go structs
// with their JSON tags. The server (internal/api) encodes and decodes
// these, the OpenAPI document is reflected from them, and the CLI and the
// tests decode the same structs, so a field added here reaches all of them
// at once instead of drifting between copies.
//
// Conventions, from API.md: names are snake_case; quantities are strings
// ("4g", "0.5") so they stay exact; durations are Go durations ("90s");
// times are RFC 3339 in UTC. Answers may gain fields, never change them;
// a field without omitempty is always present in an answer. Request
// fields are all optional (the server fills defaults), and omitempty on
// them lets a client send only what it sets. The `enum` tag lists a
// field's values for the OpenAPI document.
//
// It holds data only: no behaviour beyond formatting an error for a
// person, and it imports nothing but the standard library, so any
// client can use it without pulling in the manager.
//
// Imports: none.
package v1
