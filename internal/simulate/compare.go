package simulate

import (
	"context"
	"fmt"
	"strings"
)

// Variants expands --compare flags ("group.sequencer=fifo,drf") into the
// cross product of their values, each on top of base, in flag order then
// value order, so the same flags give the same variants in the same order.
func Variants(base []Setting, compare []string) ([][]Setting, error) {
	out := [][]Setting{append([]Setting(nil), base...)}
	for _, c := range compare {
		k, vs, ok := strings.Cut(c, "=")
		if !ok || k == "" || vs == "" {
			return nil, fmt.Errorf("compare: %q is not key=value,value,…", c)
		}
		values := splitList(vs)
		var next [][]Setting
		for _, v := range out {
			for _, val := range values {
				next = append(next, append(append([]Setting(nil), v...), Setting{Key: strings.TrimSpace(k), Value: val}))
			}
		}
		out = next
	}
	return out, nil
}

// Compare runs every variant on the same workload and cluster, one after
// the other: each has its own store, agents and clock, so none sees
// another's state.
func Compare(ctx context.Context, w Workload, cl Cluster, variants [][]Setting, opt Options) ([]Variant, error) {
	var out []Variant
	for _, settings := range variants {
		v, err := Run(ctx, w, cl, settings, opt)
		if err != nil {
			if ctx.Err() != nil && len(out) > 0 {
				break // stopped while setting up the next: keep what ran
			}
			return nil, fmt.Errorf("variant %s: %w", variantName(settings), err)
		}
		out = append(out, v)
		if v.Partial != "" {
			break // the rest would stop at once
		}
	}
	return out, nil
}
