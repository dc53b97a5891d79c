package domain

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ArrayID names a session array: many sessions of one spec submitted at
// once, each with its own index, after SLURM's job arrays
// (`sbatch --array=0-99%10`).
type ArrayID string

// MaxArrayElements bounds one array: it is stored in one transaction, and
// 10,000 is SLURM's default MaxArraySize.
const MaxArrayElements = 10000

// MaxArrayIndex bounds an index, so a spec such as "0-4000000000:1000000"
// cannot name indexes a 32-bit reader would wrap.
const MaxArrayIndex = 1_000_000

// Environment variables every element of an array gets.
const (
	EnvArrayIndex = "SOKOVAN_ARRAY_INDEX"
	EnvArrayCount = "SOKOVAN_ARRAY_COUNT"
	EnvArrayID    = "SOKOVAN_ARRAY_ID"
)

// Array is a session array: its elements are ordinary sessions that name
// it (Session.Array) and carry their index; MaxRunning, when above 0,
// caps how many of them hold resources at once (SLURM's %N).
type Array struct {
	ID    ArrayID
	Name  string
	Owner Owner
	// Spec is the index spec as submitted ("0-99%10").
	Spec       string
	Count      int
	MaxRunning int
	CreatedAt  time.Time
}

// ArraySpec is a parsed index spec: the indexes in ascending order,
// without repeats, and the cap (0: none).
type ArraySpec struct {
	Indexes    []int
	MaxRunning int
}

// ParseArraySpec reads SLURM's --array syntax: comma-separated items,
// each an index N or a range A-B with an optional step A-B:S, and an
// optional %M at the end capping how many elements run at once. Indexes
// that several items name are taken once.
func ParseArraySpec(spec string) (ArraySpec, error) {
	var out ArraySpec
	body, limit, capped := strings.Cut(spec, "%")
	if capped {
		m, err := strconv.Atoi(limit)
		if err != nil || m < 1 {
			return out, fmt.Errorf("the cap after %% must be a whole number of at least 1, not %q", limit)
		}
		out.MaxRunning = m
	}
	if strings.TrimSpace(body) == "" {
		return out, fmt.Errorf("no indexes: want such as 0-99, 1,3,5-9:2 or 0-99%%10")
	}
	seen := make(map[int]bool)
	for _, item := range strings.Split(body, ",") {
		from, to, step, err := arrayItem(item)
		if err != nil {
			return out, err
		}
		for i := from; i <= to; i += step {
			if !seen[i] {
				seen[i] = true
				out.Indexes = append(out.Indexes, i)
			}
			if len(out.Indexes) > MaxArrayElements {
				return out, fmt.Errorf("more than %d elements", MaxArrayElements)
			}
		}
	}
	sortInts(out.Indexes)
	return out, nil
}

// arrayItem reads one item of a spec: N, A-B or A-B:S.
func arrayItem(item string) (from, to, step int, err error) {
	num := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > MaxArrayIndex || strings.HasPrefix(s, "+") {
			return 0, fmt.Errorf("%q in %q is not an index from 0 to %d", s, item, MaxArrayIndex)
		}
		return n, nil
	}
	rng, stepText, stepped := strings.Cut(item, ":")
	step = 1
	if stepped {
		if step, err = strconv.Atoi(stepText); err != nil || step < 1 {
			return 0, 0, 0, fmt.Errorf("the step in %q must be a whole number of at least 1", item)
		}
	}
	a, b, isRange := strings.Cut(rng, "-")
	if from, err = num(a); err != nil {
		return 0, 0, 0, err
	}
	to = from
	if isRange {
		if to, err = num(b); err != nil {
			return 0, 0, 0, err
		}
		if to < from {
			return 0, 0, 0, fmt.Errorf("range %q runs backwards", rng)
		}
	} else if stepped {
		return 0, 0, 0, fmt.Errorf("a step needs a range, as in 1-9:2, not %q", item)
	}
	return from, to, step, nil
}

func sortInts(s []int) {
	// Insertion over runs already ascending is linear for the usual spec
	// (one range); the list is at most MaxArrayElements long.
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// ArrayElementName is the name of an array's element: "sweep[7]", so a
// name stands for one element in every verb, as `name[7]`.
func ArrayElementName(name string, index int) string {
	return name + "[" + strconv.Itoa(index) + "]"
}

// SplitArrayElementName reads "name[7]" back; ok is false for any other
// shape.
func SplitArrayElementName(ref string) (name string, index int, ok bool) {
	open := strings.LastIndexByte(ref, '[')
	if open <= 0 || !strings.HasSuffix(ref, "]") {
		return "", 0, false
	}
	n, err := strconv.Atoi(ref[open+1 : len(ref)-1])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return ref[:open], n, true
}

// ArraySummary counts an array's elements by status and by outcome.
type ArraySummary struct {
	ByStatus  map[SessionStatus]int
	ByOutcome map[Outcome]int
}

// Outcome summarises the elements' outcomes: none while any element has
// not ended; success when every element succeeded; cancelled when none
// ran (every one cancelled); failure when any failed, was preempted or
// was cancelled after others ran, so a sweep that lost one element does
// not read as a success.
func (s ArraySummary) Outcome() Outcome {
	for st, n := range s.ByStatus {
		if n > 0 && !st.Terminal() {
			return OutcomeNone
		}
	}
	total, succeeded, cancelled := 0, s.ByOutcome[OutcomeSuccess], s.ByOutcome[OutcomeCancelled]
	for o, n := range s.ByOutcome {
		if o != OutcomeNone {
			total += n
		}
	}
	switch {
	case total == 0:
		return OutcomeNone
	case succeeded == total:
		return OutcomeSuccess
	case cancelled == total:
		return OutcomeCancelled
	}
	return OutcomeFailure
}
