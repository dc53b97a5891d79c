package simulate

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// ImportOpenBNodes reads the openb trace's node list
// (openb_node_list_*.csv: sn, cpu_milli, memory_mib, gpu, model) as a
// cluster: one pool per distinct shape, gpuSlot counting each node's
// GPUs, as ImportOpenB counts a pod's. scale shrinks it, since the full
// list is about a hundred times what the default pod list needs: up to 1
// it is the fraction of the nodes kept, above 1 the number of nodes.
// Each shape keeps its share (largest remainders), and at least one node
// is kept.
func ImportOpenBNodes(r io.Reader, gpuSlot string, scale float64) (Cluster, error) {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return Cluster{}, fmt.Errorf("openb nodes: scale %v: want a fraction above 0, or a node count", scale)
	}
	rows, col, err := readCSV(r, "cpu_milli", "memory_mib", "gpu")
	if err != nil {
		return Cluster{}, fmt.Errorf("openb nodes: %w", err)
	}
	type shape struct{ cpu, mem, gpu float64 }
	count := map[shape]int{}
	for n, row := range rows {
		var f [3]float64
		for i, name := range []string{"cpu_milli", "memory_mib", "gpu"} {
			v := strings.TrimSpace(col.get(row, name))
			if f[i], err = strconv.ParseFloat(v, 64); err != nil || f[i] < 0 || math.IsInf(f[i], 0) {
				return Cluster{}, fmt.Errorf("openb nodes: %w", &LineError{Line: n + 2, Field: name, Err: fmt.Errorf("%q is not a count", v)})
			}
		}
		count[shape{f[0], f[1], f[2]}]++
	}
	if len(rows) == 0 {
		return Cluster{}, fmt.Errorf("openb nodes: no nodes")
	}
	want := scale
	if scale <= 1 {
		want = scale * float64(len(rows))
	}
	keep := max(1, int(math.Round(min(want, float64(len(rows))))))
	shapes := slices.SortedFunc(func(yield func(shape) bool) {
		for s := range count {
			if !yield(s) {
				return
			}
		}
	}, func(a, b shape) int {
		return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(a.gpu, b.gpu), cmp.Compare(a.cpu, b.cpu), cmp.Compare(a.mem, b.mem))
	})
	// Largest remainders: each shape's exact share, rounded down, then
	// one more to the largest fractions until keep nodes are placed.
	// In whole numbers, so that equal shares tie exactly.
	kept := make([]int, len(shapes))
	rem := make([]int, len(shapes))
	placed := 0
	for i, s := range shapes {
		kept[i], rem[i] = count[s]*keep/len(rows), count[s]*keep%len(rows)
		placed += kept[i]
	}
	order := make([]int, len(shapes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rem[b], rem[a]) })
	for i := 0; placed < keep; i++ {
		kept[order[i%len(order)]]++
		placed++
	}
	var cl Cluster
	for i, s := range shapes {
		if kept[i] == 0 {
			continue
		}
		res := map[string]string{"cpu": strconv.FormatFloat(s.cpu/1000, 'f', -1, 64),
			"mem": strconv.FormatFloat(s.mem, 'f', 0, 64) + "m"}
		if s.gpu > 0 {
			res[gpuSlot] = strconv.FormatFloat(s.gpu, 'f', -1, 64)
		}
		cl.Pools = append(cl.Pools, Pool{Count: kept[i], Resources: res})
	}
	return cl, nil
}

// LoadCluster is ParseCluster, or for "openb:FILE" the trace's node list
// scaled by scale (ImportOpenBNodes), validated alike.
func LoadCluster(spec string, scale float64, reg *domain.Registry) (Cluster, error) {
	file, ok := strings.CutPrefix(spec, "openb:")
	if !ok {
		if scale != 1 {
			return Cluster{}, fmt.Errorf("--scale-nodes applies to a node list (--cluster openb:FILE)")
		}
		return ParseCluster(spec, reg)
	}
	f, err := os.Open(file)
	if err != nil {
		return Cluster{}, fmt.Errorf("cluster: %w", err)
	}
	defer f.Close()
	cl, err := ImportOpenBNodes(f, "cuda.shares", scale)
	if err != nil {
		return Cluster{}, fmt.Errorf("%s: %w", file, err)
	}
	return cl, cl.validate(reg)
}
