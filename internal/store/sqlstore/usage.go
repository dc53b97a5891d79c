package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// The accounting history (migration 00150). The rollup reads the feed by
// position, like every other follower, so on PostgreSQL it sees only
// numbered rows: one committed but not yet numbered is read by the next
// pass, never skipped, since numbering only goes up.
const (
	selectUsageWatermark = `SELECT pos, {micros rolled_at} FROM usage_watermark WHERE id = 1 {lock}`
	// final_gen moves when a pass writes an hour before the hour of the
	// previous pass's end, which the fair-share cache took as final
	// (decaycache.go).
	updateUsageWatermark = `UPDATE usage_watermark SET pos = $1, rolled_at = $2, final_gen = final_gen + $3
WHERE id = 1`
	lockUsageWatermark  = `SELECT id FROM usage_watermark WHERE id = 1 {lock}`
	bumpUsageFinalGen   = `UPDATE usage_watermark SET final_gen = final_gen + 1 WHERE id = 1`
	selectKernelChanges = `SELECT {pos}, kernel_id, from_status, to_status, {micros at} FROM status_changes
WHERE {pos} > $1 AND kind = 'kernel' ORDER BY {pos}`
	selectUsageOpen = `SELECT kernel_id, resource_group, owner_user, owner_project, owner_domain, requested,
    {micros since} FROM usage_open`
	// A kernel whose session is gone is left out: there is no one to
	// charge.
	selectHoldOwners = `SELECT k.id, s.resource_group, s.owner_user, s.owner_project, s.owner_domain, k.requested
FROM kernels k JOIN sessions s ON s.id = k.session_id WHERE k.id {in $1}`
	selectHoldingKernels = `SELECT k.id, s.resource_group, s.owner_user, s.owner_project, s.owner_domain, k.requested
FROM kernels k JOIN sessions s ON s.id = k.session_id WHERE k.status IN ` + holdingKernelStatuses
	insertUsageOpen = `INSERT INTO usage_open (kernel_id, resource_group, owner_user, owner_project, owner_domain,
    requested, since)
SELECT u.k, u.g, u.us, u.p, u.d, u.r, u.t
FROM {rows $1 u(k text, g text, us text, p text, d text, r jsonb, t timestamptz)} ORDER BY u.n`
	deleteUsageOpen = `DELETE FROM usage_open WHERE kernel_id {in $1}`
	// WHERE true keeps SQLite from reading ON CONFLICT as a join's ON.
	upsertUsageHourly = `INSERT INTO usage_hourly (resource_group, hour, owner_user, owner_project, owner_domain,
    slot, amount)
SELECT u.g, u.h, u.us, u.p, u.d, u.slot, u.amount
FROM {rows $1 u(g text, h timestamptz, us text, p text, d text, slot text, amount float8)} WHERE true
ON CONFLICT (resource_group, hour, owner_user, owner_project, owner_domain, slot)
DO UPDATE SET amount = usage_hourly.amount + excluded.amount`
	pruneUsageHourly = `DELETE FROM usage_hourly WHERE hour < $1`
)

// hold is one kernel holding slots, as the rollup charges it.
type hold struct {
	kernel                       string
	group, user, project, domain string
	requested                    string
	slots                        domain.Vec
	// from is where the next credit starts: the later of since and the
	// previous pass's end for a hold open before this pass.
	since, from time.Time
	fresh       bool
}

// hourKey is one row of usage_hourly.
type hourKey struct {
	group, user, project, domain, slot string
	hour                               time.Time
}

// holdingKernelNames are the kernel statuses in which a kernel holds
// slots (domain.KernelStatus.HoldsResources), by name.
func holdingKernelNames() []string {
	var out []string
	for _, st := range domain.KernelStatuses() {
		if st.HoldsResources() {
			out = append(out, st.String())
		}
	}
	return out
}

// RollupUsage: see store.Usage.
func (s *Store) RollupUsage(ctx context.Context, now time.Time) (store.RollupResult, error) {
	if err := s.number(ctx); err != nil {
		return store.RollupResult{}, err
	}
	now = now.UTC().Truncate(time.Microsecond)
	var res store.RollupResult
	err := s.write(ctx, "roll up usage", func(tx txn) error {
		res = store.RollupResult{To: now}
		var pos int64
		var rolled *int64
		if err := tx.queryRow(ctx, selectUsageWatermark).Scan(&pos, &rolled); err != nil {
			return err
		}
		if rolled == nil {
			return s.startUsage(ctx, tx, now, &res)
		}
		res.From = time.UnixMicro(*rolled).UTC()
		if !now.After(res.From) {
			res.To = res.From
			return nil
		}
		return s.rollup(ctx, tx, pos, now, &res)
	})
	return res, err
}

// startUsage is the first pass: it charges from now on the kernels that
// hold slots now, and starts reading the feed at its head. What they held
// before the history began is not known, and is not guessed.
func (s *Store) startUsage(ctx context.Context, tx txn, now time.Time, res *store.RollupResult) error {
	res.From = now
	var head int64
	if err := tx.queryRow(ctx, selectLastChange).Scan(&head); err != nil {
		return err
	}
	holds, err := s.holdOwners(ctx, tx, selectHoldingKernels)
	if err != nil {
		return err
	}
	list := make([]*hold, 0, len(holds))
	for _, k := range slices.Sorted(mapKeys(holds)) {
		holds[k].since = now
		list = append(list, holds[k])
	}
	res.Opened = len(list)
	if err := insertHolds(ctx, tx, list); err != nil {
		return err
	}
	_, err = tx.exec(ctx, updateUsageWatermark, head, ts(now), 0)
	return err
}

// kernelChange is one kernel change of the feed, as the rollup reads it.
type kernelChange struct {
	pos      int64
	kernel   string
	from, to bool
	at       time.Time
}

func (s *Store) rollup(ctx context.Context, tx txn, pos int64, now time.Time, res *store.RollupResult) error {
	holding := map[string]bool{}
	for _, n := range holdingKernelNames() {
		holding[n] = true
	}
	var changes []kernelChange
	if err := tx.query(ctx, selectKernelChanges, []any{pos}, func(sc codec.Scanner) error {
		var c kernelChange
		var from, to string
		var at int64
		err := sc.Scan(&c.pos, &c.kernel, &from, &to, &at)
		c.from, c.to, c.at = holding[from], holding[to], time.UnixMicro(at).UTC()
		changes = append(changes, c)
		return err
	}); err != nil {
		return err
	}
	res.Changes = len(changes)
	open, err := s.openHolds(ctx, tx, res.From)
	if err != nil {
		return err
	}
	var starting []string
	for _, c := range changes {
		if c.to && !c.from {
			starting = append(starting, c.kernel)
		}
	}
	owners, err := s.holdOwners(ctx, tx, selectHoldOwners, List(uniqueSorted(starting)))
	if err != nil {
		return err
	}
	acc := map[hourKey]float64{}
	var gone []string
	for _, c := range changes {
		switch {
		case c.to && !c.from:
			// A start while the hold is open is one already counted: on
			// PostgreSQL the first pass can see a kernel holding whose
			// start is numbered past the head it read. Opening again
			// would drop the open hold's credit and collide on its row,
			// failing every pass after.
			if o, ok := owners[c.kernel]; ok && open[c.kernel] == nil {
				h := *o
				h.since, h.from, h.fresh = c.at, c.at, true
				open[c.kernel] = &h
				res.Opened++
			}
		case c.from && !c.to:
			if h, ok := open[c.kernel]; ok {
				s.credit(acc, h, c.at)
				delete(open, c.kernel)
				if !h.fresh {
					gone = append(gone, c.kernel)
				}
				res.Closed++
			}
		}
		pos = max(pos, c.pos)
	}
	var fresh []*hold
	for _, k := range slices.Sorted(mapKeys(open)) {
		h := open[k]
		s.credit(acc, h, now)
		if h.fresh {
			fresh = append(fresh, h)
		}
	}
	res.Rows = len(acc)
	if err := writeUsage(ctx, tx, acc); err != nil {
		return err
	}
	if len(gone) > 0 {
		if _, err := tx.exec(ctx, deleteUsageOpen, List(gone)); err != nil {
			return err
		}
	}
	if err := insertHolds(ctx, tx, fresh); err != nil {
		return err
	}
	_, err = tx.exec(ctx, updateUsageWatermark, pos, ts(now), backdated(acc, res.From))
	return err
}

// backdated is 1 when acc credits an hour before the hour of from, the
// previous pass's end: a hold opened by a change stamped before it. Only
// such a credit changes an hour a reader may have taken as final.
func backdated(acc map[hourKey]float64, from time.Time) int {
	cut := from.Truncate(time.Hour)
	for k := range acc {
		if k.hour.Before(cut) {
			return 1
		}
	}
	return 0
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// openHolds reads the holds open after the previous pass, each to be
// credited from that pass's end (from).
func (s *Store) openHolds(ctx context.Context, tx txn, from time.Time) (map[string]*hold, error) {
	open := map[string]*hold{}
	err := tx.query(ctx, selectUsageOpen, nil, func(sc codec.Scanner) error {
		var k string
		var since int64
		h := &hold{}
		if err := sc.Scan(&k, &h.group, &h.user, &h.project, &h.domain, &h.requested, &since); err != nil {
			return err
		}
		var err error
		if h.slots, err = codec.DecodeSlots(s.reg, h.requested); err != nil {
			return &store.CorruptRowError{Table: "usage_open", ID: k, Column: "requested", Err: err}
		}
		h.kernel = k
		h.since = time.UnixMicro(since).UTC()
		h.from = h.since
		if from.After(h.from) {
			h.from = from
		}
		open[k] = h
		return nil
	})
	return open, err
}

// holdOwners reads whom each kernel's hold is charged to and its slots.
func (s *Store) holdOwners(ctx context.Context, tx txn, query string, args ...any) (map[string]*hold, error) {
	out := map[string]*hold{}
	err := tx.query(ctx, query, args, func(sc codec.Scanner) error {
		var k string
		h := &hold{}
		if err := sc.Scan(&k, &h.group, &h.user, &h.project, &h.domain, &h.requested); err != nil {
			return err
		}
		var err error
		if h.slots, err = codec.DecodeSlots(s.reg, h.requested); err != nil {
			return &store.CorruptRowError{Table: "kernels", ID: k, Column: "requested", Err: err}
		}
		h.kernel = k
		out[k] = h
		return nil
	})
	return out, err
}

// credit adds what h held from h.from to until to acc, split at the hours.
// A change stamped before the previous pass's end (a clock behind, or a
// commit that came late) credits nothing rather than a negative amount.
func (s *Store) credit(acc map[hourKey]float64, h *hold, until time.Time) {
	for t := h.from; t.Before(until); {
		hour := t.Truncate(time.Hour)
		end := hour.Add(time.Hour)
		if until.Before(end) {
			end = until
		}
		secs := end.Sub(t).Seconds()
		for id, q := range h.slots {
			if q == 0 {
				continue
			}
			k := hourKey{group: h.group, user: h.user, project: h.project, domain: h.domain,
				slot: s.reg.Type(domain.SlotID(id)).Name, hour: hour}
			acc[k] += float64(q) * secs
		}
		t = end
	}
	if until.After(h.from) {
		h.from = until
	}
}

// insertHolds records holds opened by this pass that are still open.
func insertHolds(ctx context.Context, tx txn, holds []*hold) error {
	n := len(holds)
	if n == 0 {
		return nil
	}
	ks, gs, us, ps, ds, rs, ts := make([]string, n), make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]time.Time, n)
	for i, h := range holds {
		ks[i], gs[i], us[i], ps[i], ds[i], rs[i], ts[i] = h.kernel, h.group, h.user, h.project, h.domain, h.requested, h.since
	}
	return tx.execN(ctx, n, insertUsageOpen, Rows{ks, gs, us, ps, ds, rs, ts})
}

// writeUsage adds the pass's credits to the hourly rows, in key order so
// that two writers (there is one: the watermark's lock) meet rows in one
// order.
func writeUsage(ctx context.Context, tx txn, acc map[hourKey]float64) error {
	if len(acc) == 0 {
		return nil
	}
	keys := make([]hourKey, 0, len(acc))
	for k := range acc {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b hourKey) int {
		return cmpKeys(a, b)
	})
	n := len(keys)
	gs, hs, us, ps, ds, ss, as := make([]string, n), make([]time.Time, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]float64, n)
	for i, k := range keys {
		gs[i], hs[i], us[i], ps[i], ds[i], ss[i], as[i] = k.group, k.hour, k.user, k.project, k.domain, k.slot, acc[k]
	}
	_, err := tx.exec(ctx, upsertUsageHourly, Rows{gs, hs, us, ps, ds, ss, as})
	return err
}

func cmpKeys(a, b hourKey) int {
	if c := a.hour.Compare(b.hour); c != 0 {
		return c
	}
	for _, p := range [][2]string{{a.group, b.group}, {a.user, b.user}, {a.project, b.project}, {a.domain, b.domain}, {a.slot, b.slot}} {
		if c := strings.Compare(p[0], p[1]); c != 0 {
			return c
		}
	}
	return 0
}

// PruneUsage: see store.Usage. Deleting hours changes what the
// fair-share cache took as final, so a prune that deletes any moves
// final_gen; it locks the watermark first, as a rollup does, so the two
// take their locks in one order.
func (s *Store) PruneUsage(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, "prune usage", func(tx txn) error {
		if err := tx.lock(ctx, lockUsageWatermark); err != nil {
			return err
		}
		var err error
		if n, err = tx.exec(ctx, pruneUsageHourly, ts(before)); err != nil || n == 0 {
			return err
		}
		_, err = tx.exec(ctx, bumpUsageFinalGen)
		return err
	})
	return n, err
}

// usageHistory is one query per key column, so no column name is ever
// built from input.
var usageHistory = func() map[store.UsageBy]string {
	out := map[store.UsageBy]string{}
	for by, col := range map[store.UsageBy]string{store.UsageByUser: "owner_user", store.UsageByProject: "owner_project",
		store.UsageByDomain: "owner_domain", store.UsageByGroup: "resource_group"} {
		out[by] = `SELECT {micros hour}, ` + col + `, slot, SUM(amount) FROM usage_hourly
WHERE hour >= $1 AND hour < $2 AND ($3 = '' OR resource_group = $3) AND ($4 = '' OR owner_user = $4)
  AND ($5 = '' OR owner_project = $5) AND ($6 = '' OR slot = $6)
GROUP BY hour, ` + col + `, slot ORDER BY hour, ` + col + `, slot`
	}
	return out
}()

// farPast and farFuture stand for an open end of a range.
var (
	farPast   = time.Unix(0, 0).UTC()
	farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
)

// UsageHistory: see store.Usage.
func (s *Store) UsageHistory(ctx context.Context, f store.UsageFilter) ([]store.UsageRow, error) {
	if f.By == "" {
		f.By = store.UsageByUser
	}
	q, ok := usageHistory[f.By]
	if !ok {
		return nil, fmt.Errorf("usage history: %w: by %q (user, project, domain or group)", store.ErrInvalid, f.By)
	}
	since, until := farPast, farFuture
	if !f.Since.IsZero() {
		since = f.Since.UTC()
	}
	if !f.Until.IsZero() {
		until = f.Until.UTC()
	}
	args := []any{since, until, f.Group, f.User, f.Project, f.Slot}
	return readAll(ctx, s, "usage history", q, args, func(sc codec.Scanner) (store.UsageRow, error) {
		var r store.UsageRow
		var hour int64
		err := sc.Scan(&hour, &r.Key, &r.Slot, &r.Amount)
		r.Hour = time.UnixMicro(hour).UTC()
		return r, err
	})
}

// selectDecayedUsage weighs each hour of a group's history by
// 2^(-age/half-life) in SQL, age from the hour's middle ($2 is now less
// half an hour, in microseconds) to now, the hour not yet over weighing
// 1, so a round reads one row per project, user and slot rather than
// every hour. Hours older than 30 half-lives (a weight under 1e-9) are
// left unread.
const selectDecayedUsage = `SELECT owner_project, owner_user, slot,
    SUM(amount * ` + decayWeight + `)
FROM usage_hourly WHERE resource_group = $1 AND hour >= $4
GROUP BY owner_project, owner_user, slot ORDER BY owner_project, owner_user, slot`

// decayWeight is hour's weight at mid $2 with half-life $3, both in
// microseconds.
const decayWeight = `CASE WHEN {micros hour} >= $2 THEN 1.0
        ELSE power(2.0, CAST({micros hour} - $2 AS DOUBLE PRECISION) / CAST($3 AS DOUBLE PRECISION)) END`

// decayedUsage reads the group's history for the fairshare sequencer.
func (s *Store) decayedUsage(ctx context.Context, tx txn, group string, now time.Time, halfLife time.Duration) ([]framework.DecayedUsage, error) {
	mid := now.Add(-30 * time.Minute).UnixMicro()
	horizon := now.Add(-30 * halfLife)
	var out []framework.DecayedUsage
	err := tx.query(ctx, selectDecayedUsage, []any{group, mid, float64(halfLife.Microseconds()), horizon}, func(sc codec.Scanner) error {
		var project, user, slot string
		var v float64
		if err := sc.Scan(&project, &user, &slot, &v); err != nil {
			return err
		}
		id, ok := s.reg.Lookup(slot)
		if !ok {
			return nil // a slot no longer registered is no longer scheduled
		}
		if n := len(out); n == 0 || out[n-1].Project != project || out[n-1].User != user {
			out = append(out, framework.DecayedUsage{Project: project, User: user, Slots: make([]float64, s.reg.Len())})
		}
		out[len(out)-1].Slots[id] += v
		return nil
	})
	return out, err
}
