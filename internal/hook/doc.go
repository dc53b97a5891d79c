// Package hook holds the session-type hooks of seed 000 (its SessionHook
// and HookRegistry): per type, what happens when a session is submitted
// (OnSchedule), when its kernels are started (OnStart) and whether a
// running session ends now (OnEnd). The registry is built explicitly by
// Standard (or New) and passed to the API server and the coordinator; no
// package registers anything as a side effect.
//
// Hooks are pure decisions over values and an instant: they do no I/O and
// read no clock, so they are table-tested and replayable. The store finds
// the candidate sessions (store.Store.DueSessions); a hook has the final
// word. Hook may import only domain.
//
// Imports: internal/domain.
package hook
