package simulate_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/simulate"
)

// Ten nodes in the node list's layout: six 8-GPU, three CPU-only, one
// 2-GPU.
const openbNodes = `sn,cpu_milli,memory_mib,gpu,model
n0,96000,786432,8,V100M32
n1,96000,786432,8,V100M32
n2,96000,786432,8,V100M32
n3,96000,786432,8,V100M32
n4,96000,786432,8,V100M32
n5,96000,786432,8,V100M32
n6,64000,262144,0,
n7,64000,262144,0,
n8,64000,262144,0,
n9,32000,131072,2,T4
`

func TestImportOpenBNodes(t *testing.T) {
	pools := func(cl simulate.Cluster) []string {
		var out []string
		for _, p := range cl.Pools {
			out = append(out, p.Resources["cpu"]+"/"+p.Resources["mem"]+"/"+p.Resources["cuda.shares"]+"×"+strconv.Itoa(p.Count))
		}
		return out
	}
	for _, c := range []struct {
		scale float64
		want  []string
	}{
		{1, []string{"96/786432m/8×6", "64/262144m/×3", "32/131072m/2×1"}},
		{0.5, []string{"96/786432m/8×3", "64/262144m/×2"}},
		{4, []string{"96/786432m/8×3", "64/262144m/×1"}},
		{0.01, []string{"96/786432m/8×1"}},
	} {
		cl, err := simulate.ImportOpenBNodes(strings.NewReader(openbNodes), "cuda.shares", c.scale)
		if err != nil {
			t.Fatalf("scale %v: %v", c.scale, err)
		}
		if diff := cmp.Diff(c.want, pools(cl)); diff != "" {
			t.Errorf("scale %v: pools (-want +got):\n%s", c.scale, diff)
		}
	}
	if _, err := simulate.ImportOpenBNodes(strings.NewReader(openbNodes), "cuda.shares", 0); err == nil {
		t.Error("scale 0 accepted")
	}
	bad := strings.Replace(openbNodes, "n9,32000", "n9,lots", 1)
	if _, err := simulate.ImportOpenBNodes(strings.NewReader(bad), "cuda.shares", 1); err == nil || !strings.Contains(err.Error(), "line 11") {
		t.Errorf("a bad row: %v, want the error to name line 11", err)
	}
}
