package codec

import (
	"fmt"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// HistoryRow is a stored history entry with its row id.
type HistoryRow = Row[domain.HistoryEntry]

// Row is a stored history record with its row id.
type Row[E any] struct {
	RowID int64
	Entry E
}

// MergeHistory decides how new entries land, given each session's latest
// stored entry; see MergeRepeats.
func MergeHistory(last map[domain.SessionID]HistoryRow, entries []domain.HistoryEntry) (updates []HistoryRow, inserts []domain.HistoryEntry) {
	return MergeRepeats(last, entries, func(e domain.HistoryEntry) domain.SessionID { return e.Subject })
}

// MergeRepeats decides how new history records land, given the latest
// stored record of each key (a session; a deployment and route): a record
// that repeats its key's latest (domain.Record.Repeats) adds to that
// record's attempts and moves its time; anything else starts a new record.
// Records are taken in order, so a repeat within one batch merges too. It
// returns the stored rows to update and the records to insert, in order.
func MergeRepeats[K comparable, ID ~string, S comparable, C ~string, R ~string](
	last map[K]Row[domain.Record[ID, S, C, R]], entries []domain.Record[ID, S, C, R],
	key func(domain.Record[ID, S, C, R]) K,
) (updates []Row[domain.Record[ID, S, C, R]], inserts []domain.Record[ID, S, C, R]) {
	type tail struct {
		row     Row[domain.Record[ID, S, C, R]] // RowID 0: the entry is inserts[insert]
		insert  int
		updated bool
	}
	tails := make(map[K]*tail, len(last))
	for k, r := range last {
		tails[k] = &tail{row: r}
	}
	var order []*tail // stored rows in the order they were first updated
	for _, e := range entries {
		n := max(e.Attempt, 1)
		k := key(e)
		if t := tails[k]; t != nil {
			cur := &t.row.Entry
			if t.row.RowID == 0 {
				cur = &inserts[t.insert]
			}
			if e.Repeats(*cur) {
				cur.Attempt += n
				cur.At = e.At
				if t.row.RowID != 0 && !t.updated {
					t.updated = true
					order = append(order, t)
				}
				continue
			}
		}
		e.Attempt = n
		inserts = append(inserts, e)
		tails[k] = &tail{insert: len(inserts) - 1}
	}
	for _, t := range order {
		updates = append(updates, t.row)
	}
	return updates, inserts
}

// ChangeColumns are the change feed's columns after the position, in the
// order ScanChange reads them.
const ChangeColumns = `kind, session_id, kernel_id, owner_user, from_status, to_status, reason, agent_id, exit_code, at`

// ScanChange reads a position followed by ChangeColumns.
func ScanChange(sc Scanner) (store.Change, error) {
	var (
		c                  store.Change
		kind, sid, kid, ag string
		exit               *int64
		at                 rawTime
	)
	if err := sc.Scan(&c.Pos, &kind, &sid, &kid, &c.Owner, &c.From, &c.To, &c.Reason, &ag, &exit, &at); err != nil {
		return c, err
	}
	c.Kind, c.Session, c.Kernel, c.Agent = store.ChangeKind(kind), domain.SessionID(sid), domain.KernelID(kid), domain.AgentID(ag)
	if exit != nil {
		code := int(*exit)
		c.ExitCode = &code
	}
	e := rowErr{table: "status_changes", id: fmt.Sprint(c.Pos)}
	c.At = e.time("at", at)
	if c.Kind != store.ChangeSession && c.Kind != store.ChangeKernel {
		e.fail("kind", fmt.Errorf("unknown change kind %q", kind))
	}
	return c, e.err
}
