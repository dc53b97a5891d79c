// Package events carries agent events from the manager that receives them
// to the manager that applies them. In dev mode the gateway applies events
// itself; with several managers they go through Redis (or Valkey) Streams:
// one stream, one consumer group of managers, at-least-once delivery. A
// message is acknowledged only after its handler — the kernel state engine
// writing to the store — returned, and entries left pending by a dead
// consumer are reclaimed with XAUTOCLAIM. Handlers are idempotent, so a
// redelivery is harmless.
//
// It may import the standard library and go-redis only.
//
// Imports: github.com/redis/go-redis/v9/....
package events
