package sqlstore

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// The fair-share cache keeps, per resource group, the decayed sum of the
// hours of its usage history that can no longer change, so that a round
// of a fairshare group reads only the hours that still can. Read whole,
// the history is every hour back to 30 half-lives: 90 days of 50 users
// and 3 slots made every PostgreSQL round of such a group about 120 ms.
//
// An hour is final once it is before the hour of usage_watermark's
// rolled_at: a rollup credits the holds open at its previous pass from
// that pass's end on. Two writes reach further back, and each moves
// usage_watermark.final_gen in its transaction: a pass crediting a hold
// opened by a change stamped before the previous pass's end (committed
// late, or written by a manager whose clock is behind), and a prune that
// deletes hours. The watermark is read in the load's own read transaction,
// with everything else, so several managers (each store instance has its
// own cache) see one another's rollups as they commit.
//
// Hour h weighs 2^((h − mid)/halfLife) at mid = now − 30 min (age from the
// hour's middle), every hour from mid on weighing 1. A sum kept with
// weights relative to a fixed reference mid ref is therefore brought to
// any mid by one factor, 2^(-(mid − ref)/halfLife), as long as every hour
// in it is before mid. A base holds, per project, user and slot, Σ
// amount·2^((h − ref)/halfLife) and the number of rows over the hours
// [lo, edge): lo is the horizon the full read stops at (now less 30
// half-lives), edge the lesser of the watermark's hour and the first hour
// starting at or after mid, so every hour in it is final and before mid.
// A load moves the base to its own [lo, edge) with a few small range reads
// (the hours that fell behind the horizon taken off, the hours newly final
// added), and reads the hours from edge on with the full read's
// weighting, in one batch. Row counts keep a key present exactly while the
// full read finds a row of it. So the result is the full read's up to
// float rounding (relative 1e-12 over thousands of hours).
//
// A base is read again whole when the half-life or final_gen changed, when
// the watermark's hour went back, and when mid is more than a day or 32
// half-lives from ref (no weight past 2^32, and nothing in doubt lasts).
// With 90 days of history kept, the sweep's prune deletes an hour every
// hour, so each fairshare group is read whole about once an hour.
//
// It lives in the snapshot cache and under its lock, which LoadSnapshot
// holds for its whole read transaction anyway: loads are one at a time
// already, and the reads it adds are small. A whole read holds the lock
// as long as every fairshare load held it before the cache, now about
// once an hour.
type decayCache struct {
	groups map[string]*decayBase
}

// decayBase is one group's sum of final hours, as of reference ref.
type decayBase struct {
	halfLife time.Duration
	gen      int64
	ref      int64 // microseconds
	lo, edge time.Time
	sums     map[decayKey]*decaySum
	// doubt is set when a range read takes off rows the base does not
	// have.
	doubt bool
}

type decayKey struct{ project, user, slot string }

type decaySum struct {
	v    float64
	rows int64
}

// usageCut is the watermark as a load reads it.
type usageCut struct {
	rolled *int64 // microseconds; nil before the first rollup
	gen    int64
}

// Bounds of a base's age, from its reference to a load's mid.
const (
	decayMaxAge       = 24 * time.Hour
	decayMaxHalfLives = 32
)

const (
	selectUsageCut = `SELECT {micros rolled_at}, final_gen FROM usage_watermark WHERE id = 1`
	// selectDecayedRange weighs the hours of [$4, $5) by 2^((hour − $2) /
	// $3), with no hour weighing 1: every hour it is asked for is before
	// the load's mid.
	selectDecayedRange = `SELECT owner_project, owner_user, slot,
    SUM(amount * power(2.0, CAST({micros hour} - $2 AS DOUBLE PRECISION) / CAST($3 AS DOUBLE PRECISION))),
    COUNT(*)
FROM usage_hourly WHERE resource_group = $1 AND hour >= $4 AND hour < $5
GROUP BY owner_project, owner_user, slot`
	// selectDecayedTail is selectDecayedUsage from the base's edge on, a
	// text of its own: PostgreSQL plans a prepared statement once for
	// all its runs after a few, from what they cost, and the full read's
	// runs (the uncached reference) would have this one planned for every
	// hour, a parallel scan that costs a few milliseconds to start.
	selectDecayedTail = `SELECT owner_project, owner_user, slot, SUM(amount * ` + decayWeight + `)
FROM usage_hourly WHERE resource_group = $1 AND hour >= $4
GROUP BY owner_project, owner_user, slot`
)

// read is decayedUsage through the cache; cut is the watermark as read in
// tx. On an error the group's base is dropped, to be read whole next time.
func (d *decayCache) read(ctx context.Context, s *Store, tx txn, group string, now time.Time,
	halfLife time.Duration, cut usageCut) ([]framework.DecayedUsage, error) {
	out, err := d.bring(ctx, s, tx, group, now, halfLife, cut)
	if err != nil {
		delete(d.groups, group)
	}
	return out, err
}

// decaySpan is what a load at now can take from a base: its mid in
// microseconds and the final hours [lo, edge), lo <= edge.
func decaySpan(now time.Time, halfLife time.Duration, cut usageCut) (int64, time.Time, time.Time) {
	mid := now.Add(-30 * time.Minute)
	lo := now.Add(-30 * halfLife).UTC().Truncate(time.Microsecond)
	edge := lo
	if cut.rolled != nil {
		edge = time.UnixMicro(*cut.rolled).UTC().Truncate(time.Hour)
		if c := ceilHour(mid); c.Before(edge) {
			edge = c
		}
		if edge.Before(lo) {
			edge = lo
		}
	}
	return mid.UnixMicro(), lo, edge
}

// ceilHour is the first hour that starts at or after t.
func ceilHour(t time.Time) time.Time {
	h := t.UTC().Truncate(time.Hour)
	if h.Before(t) {
		h = h.Add(time.Hour)
	}
	return h
}

func (b *decayBase) fits(mid int64, halfLife time.Duration, gen int64, edge time.Time) bool {
	age := max(mid-b.ref, b.ref-mid)
	return b.halfLife == halfLife && b.gen == gen && !edge.Before(b.edge) &&
		age <= decayMaxAge.Microseconds() && age <= decayMaxHalfLives*halfLife.Microseconds()
}

func (d *decayCache) bring(ctx context.Context, s *Store, tx txn, group string, now time.Time,
	halfLife time.Duration, cut usageCut) ([]framework.DecayedUsage, error) {
	mid, lo, edge := decaySpan(now, halfLife, cut)
	b := d.groups[group]
	if b == nil || !b.fits(mid, halfLife, cut.gen, edge) {
		if err := s.hook(store.FaultDecayRebase); err != nil {
			return nil, err
		}
		// An empty base over [lo, lo): the ranges below add [lo, edge).
		b = &decayBase{halfLife: halfLife, gen: cut.gen, ref: mid, lo: lo, edge: lo, sums: map[decayKey]*decaySum{}}
		if d.groups == nil {
			d.groups = map[string]*decayBase{}
		}
		d.groups[group] = b
	}
	hl := float64(halfLife.Microseconds())
	var stmts []Stmt
	span := func(from, to time.Time, sign int64) {
		// Rows are at hours' starts: a span without one has none, and
		// the horizon moves every load but passes an hour once an hour.
		if !ceilHour(from).Before(to) {
			return
		}
		stmts = append(stmts, Stmt{SQL: selectDecayedRange, Args: []any{group, b.ref, hl, from, to},
			Row: func(sc codec.Scanner) error {
				var k decayKey
				var v float64
				var n int64
				if err := sc.Scan(&k.project, &k.user, &k.slot, &v, &n); err != nil {
					return err
				}
				b.add(k, float64(sign)*v, sign*n)
				return nil
			}})
	}
	// The base covers [b.lo, b.edge) and must come to cover [lo, edge),
	// edge >= b.edge: off what fell behind the horizon, on what came
	// into it (now earlier than the last load's) and what became final.
	if lo.After(b.lo) {
		span(b.lo, minTime(lo, b.edge), -1)
	}
	if lo.Before(b.lo) {
		span(lo, minTime(b.lo, edge), 1)
	}
	span(maxTime(b.edge, lo), edge, 1)
	tail := map[decayKey]float64{}
	stmts = append(stmts, Stmt{SQL: selectDecayedTail, Args: []any{group, mid, hl, edge},
		Row: func(sc codec.Scanner) error {
			var k decayKey
			var v float64
			err := sc.Scan(&k.project, &k.user, &k.slot, &v)
			tail[k] += v
			return err
		}})
	if err := tx.batch(ctx, stmts...); err != nil {
		return nil, err
	}
	if b.doubt {
		delete(d.groups, group)
		return d.bring(ctx, s, tx, group, now, halfLife, cut) // a fresh base only adds: no doubt again
	}
	b.lo, b.edge = lo, edge
	return b.usage(s, mid, tail), nil
}

// add adds v and n rows to k's sum, dropping it when no row is left.
func (b *decayBase) add(k decayKey, v float64, n int64) {
	sum := b.sums[k]
	if sum == nil {
		sum = &decaySum{}
		b.sums[k] = sum
	}
	sum.v += v
	sum.rows += n
	switch {
	case sum.rows < 0:
		b.doubt = true
	case sum.rows == 0:
		delete(b.sums, k)
	}
}

// usage is the base brought to mid plus the hours from its edge on, as
// decayedUsage gives it: by project, user and slot, slots no longer
// registered left out.
func (b *decayBase) usage(s *Store, mid int64, tail map[decayKey]float64) []framework.DecayedUsage {
	scale := math.Exp2(-float64(mid-b.ref) / float64(b.halfLife.Microseconds()))
	keys := make([]decayKey, 0, len(b.sums)+len(tail))
	for k := range b.sums {
		keys = append(keys, k)
	}
	for k := range tail {
		if _, ok := b.sums[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y decayKey) int {
		return cmp.Or(cmp.Compare(x.project, y.project), cmp.Compare(x.user, y.user), cmp.Compare(x.slot, y.slot))
	})
	var out []framework.DecayedUsage
	for _, k := range keys {
		id, ok := s.reg.Lookup(k.slot)
		if !ok {
			continue
		}
		if n := len(out); n == 0 || out[n-1].Project != k.project || out[n-1].User != k.user {
			out = append(out, framework.DecayedUsage{Project: k.project, User: k.user, Slots: make([]float64, s.reg.Len())})
		}
		v := tail[k]
		if sum, ok := b.sums[k]; ok {
			v += sum.v * scale
		}
		out[len(out)-1].Slots[id] += v
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
