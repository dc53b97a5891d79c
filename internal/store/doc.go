// Package store owns persistence: the typed errors every engine returns, the
// row and filter types shared by engines and callers, one interface per
// aggregate (Groups, Agents, AgentReports, Jobs, Arrays, Sessions, Scheduling,
// Feed, Users, Policies, Usage, and Deployments with the controller's
// DeploymentControl), and Store, their composition, which the conformance
// suite (storetest) drives. The store's logic is written once, in
// store/sqlstore, over a small seam that the engines store/sqlite
// (embedded default) and store/postgres implement;
// both keep the same guarantees, checked by the same suite:
//
//   - every operation is one transaction, and every status change is guarded
//     by the status it expects to find;
//   - an agent's occupied slots always equal the sum of the requested slots
//     of its kernels in SCHEDULED through TERMINATING (DESIGN.md invariant 1),
//     because reservation and release happen in the same transaction as the
//     status change that causes them;
//   - a plan placement is applied whole or dropped whole with a reason;
//   - every status change of a session or kernel lands in the change feed
//     (Changes) in its own transaction, and a reader that has passed a
//     position has seen every change before it;
//   - a PendingLimit given to CreateSession is exact however many store
//     instances create sessions at once: the count and the insert are one
//     transaction, serialised per limit (CreateArray counts every element
//     of an array against it); so is a session's name, unique among its
//     owner's live sessions and live arrays (ErrNameTaken); and so is the
//     group's admission: CreateSession reads the group's state under a
//     shared row lock, so no session is created after a change to DRAINING
//     commits (*GroupClosedError, an ErrConflict); RemoveResourceGroup
//     counts a group's live sessions and agents under its row lock, so
//     neither a creation nor a registration slips past a removal;
//   - no driver error leaks upward: callers see ErrNotFound, ErrConflict,
//     ErrNameTaken, ErrGuardFailed, ErrInvalid, ErrLimitReached (a *LimitError),
//     ErrCorrupt (a *CorruptRowError naming the row) or ErrUnavailable,
//     and context errors as they are.
//
// Callers above the store (coordinator, API) declare their own ports,
// which the concrete engine types satisfy: a port embeds the aggregates it
// uses (nearly) whole and names the few methods it takes from others, so
// each method's contract is written once, on its aggregate.
//
// It may import internal/domain, internal/scheduler/framework and the
// standard library, nothing above them.
//
// Imports: internal/domain, internal/scheduler/framework.
package store
