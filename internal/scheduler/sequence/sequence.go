package sequence

import (
	"container/heap"
	"slices"

	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// older orders two sessions by created time, then id.
func older(st *framework.State, a, b int32) int {
	x, y := &st.Sessions[a].Pending.Session, &st.Sessions[b].Pending.Session
	if c := x.CreatedAt.Compare(y.CreatedAt); c != 0 {
		return c
	}
	switch {
	case x.ID < y.ID:
		return -1
	case x.ID > y.ID:
		return 1
	}
	return 0
}

// static is a queue over a precomputed order.
type static struct {
	order []int32
	next  int
}

func (q *static) Next() (int32, bool) {
	if q.next >= len(q.order) {
		return 0, false
	}
	q.next++
	return q.order[q.next-1], true
}

func (q *static) Placed(int32) {}

// FIFO tries the oldest session first.
type FIFO struct{}

func (FIFO) Name() string { return "fifo" }

func (FIFO) Queue(st *framework.State, band []int32) framework.Queue {
	order := slices.Clone(band)
	slices.SortFunc(order, func(a, b int32) int { return older(st, a, b) })
	return &static{order: order}
}

// LIFO tries the newest session first; equal times still break by id
// ascending, so the order is total.
type LIFO struct{}

func (LIFO) Name() string { return "lifo" }

func (LIFO) Queue(st *framework.State, band []int32) framework.Queue {
	order := slices.Clone(band)
	slices.SortFunc(order, func(a, b int32) int {
		x, y := &st.Sessions[a].Pending.Session, &st.Sessions[b].Pending.Session
		if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
			return c
		}
		return older(st, a, b)
	})
	return &static{order: order}
}

// DRF serves the user with the smallest dominant share next — the largest
// fraction of any one slot of the group's capacity the user holds — and
// recomputes that share after each placement, so one user's burst cannot
// starve another. Within a user, sessions go oldest first.
type DRF struct{}

func (DRF) Name() string { return "drf" }

func (DRF) Queue(st *framework.State, band []int32) framework.Queue {
	order := slices.Clone(band)
	slices.SortFunc(order, func(a, b int32) int { return older(st, a, b) })
	byUser := make(map[string]*userQueue)
	q := &drfQueue{st: st}
	for _, i := range order {
		u := st.Sessions[i].Pending.Session.Owner.User
		uq, ok := byUser[u]
		if !ok {
			uq = &userQueue{user: u}
			byUser[u] = uq
			q.users = append(q.users, uq)
		}
		uq.sessions = append(uq.sessions, i)
	}
	// q.users is in order of each user's oldest session, so it does not
	// depend on map iteration.
	for _, uq := range q.users {
		uq.share = st.DominantShare(uq.user)
	}
	heap.Init(q)
	return q
}

type userQueue struct {
	user     string
	sessions []int32
	share    float64
}

type drfQueue struct {
	st    *framework.State
	users []*userQueue
	// last is the user popped by the previous Next, pushed back (with its
	// share recomputed) on the following call.
	last *userQueue
}

func (q *drfQueue) Next() (int32, bool) {
	if q.last != nil {
		if len(q.last.sessions) > 0 {
			q.last.share = q.st.DominantShare(q.last.user)
			heap.Push(q, q.last)
		}
		q.last = nil
	}
	if len(q.users) == 0 {
		return 0, false
	}
	uq := heap.Pop(q).(*userQueue)
	i := uq.sessions[0]
	uq.sessions = uq.sessions[1:]
	q.last = uq
	return i, true
}

func (q *drfQueue) Placed(int32) {} // the share is recomputed from the round state on the next call

func (q *drfQueue) Len() int { return len(q.users) }

func (q *drfQueue) Less(i, j int) bool {
	a, b := q.users[i], q.users[j]
	if a.share != b.share {
		return a.share < b.share
	}
	return older(q.st, a.sessions[0], b.sessions[0]) < 0
}

func (q *drfQueue) Swap(i, j int) { q.users[i], q.users[j] = q.users[j], q.users[i] }

func (q *drfQueue) Push(x any) { q.users = append(q.users, x.(*userQueue)) }

func (q *drfQueue) Pop() any {
	n := len(q.users)
	x := q.users[n-1]
	q.users = q.users[:n-1]
	return x
}
