// Command genopenb writes a synthetic pod list and node list in the layout
// of Alibaba's cluster-trace-gpu-v2023 (openb_pod_list_*.csv,
// openb_node_list_*.csv), for docs/SIMULATION.md's worked example. The
// numbers are made up, not taken from the trace: a mix of fractional-GPU,
// whole-GPU, multi-GPU and CPU pods arriving as a Poisson process, with
// lognormal run times and a made-up "trace's own" wait (scheduled_time −
// creation_time) so the example can show how such a comparison is read.
//
//	go run ./internal/simulate/testdata/genopenb -dir internal/simulate/testdata
//
// It lives under testdata so that ./... leaves it out of builds and tests.
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("dir", ".", "where to write openb_pod_list_sample.csv and openb_node_list_sample.csv")
	pods := flag.Int("pods", 3000, "how many pods")
	nodes := flag.Int("nodes", 40, "how many GPU nodes (a tenth more CPU nodes are added)")
	seed := flag.Uint64("seed", 1, "seed")
	flag.Parse()
	rng := rand.New(rand.NewPCG(*seed, 0x6f70656e62))
	if err := writeNodes(filepath.Join(*dir, "openb_node_list_sample.csv"), *nodes); err != nil {
		log.Fatal(err)
	}
	if err := writePods(filepath.Join(*dir, "openb_pod_list_sample.csv"), *pods, rng); err != nil {
		log.Fatal(err)
	}
}

func writeNodes(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fmt.Fprintln(f, "sn,cpu_milli,memory_mib,gpu,model")
	for i := range n {
		// Three GPU node shapes, as the trace has several models.
		switch i % 4 {
		case 0:
			fmt.Fprintf(f, "openb-node-%04d,96000,786432,8,V100M32\n", i)
		case 1, 2:
			fmt.Fprintf(f, "openb-node-%04d,64000,262144,4,T4\n", i)
		default:
			fmt.Fprintf(f, "openb-node-%04d,128000,786432,8,A10\n", i)
		}
	}
	for i := range max(1, n/10) {
		fmt.Fprintf(f, "openb-node-%04d,96000,393216,0,\n", n+i)
	}
	return f.Close()
}

// kind is one pod shape: GPUs × milli-GPU each, CPU, memory, its share of
// pods and its run time's median.
type kind struct {
	gpus, milli, cpu, mem int
	share, median         float64
}

var kinds = []kind{
	{0, 0, 4000, 8192, 0.15, 600},     // CPU only
	{1, 250, 4000, 16384, 0.15, 900},  // a quarter GPU
	{1, 500, 6000, 24576, 0.20, 1200}, // half a GPU
	{1, 1000, 8000, 32768, 0.30, 1800},
	{2, 1000, 16000, 65536, 0.10, 3600},
	{4, 1000, 32000, 131072, 0.07, 5400},
	{8, 1000, 64000, 262144, 0.03, 7200},
}

func writePods(path string, n int, rng *rand.Rand) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fmt.Fprintln(f, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time")
	t := 0.0
	qos := []string{"LS", "BE", "Burstable"}
	for i := range n {
		t += rng.ExpFloat64() * 45 // a pod every 45 s on average: about 0.8 of the GPUs asked
		k := pick(rng)
		run := math.Min(86400, math.Max(30, k.median*math.Exp(1.2*rng.NormFloat64())))
		// The made-up wait of the trace's own scheduler: longer for
		// larger pods.
		wait := rng.ExpFloat64() * 30 * float64(max(1, k.gpus))
		spec := ""
		if k.gpus > 0 && rng.IntN(3) == 0 {
			spec = "V100M32"
		}
		created := math.Round(t)
		sched := created + math.Round(wait)
		fmt.Fprintf(f, "openb-pod-%04d,%d,%d,%d,%d,%s,%s,Succeeded,%.0f,%.0f,%.0f\n", i, k.cpu, k.mem, k.gpus, k.milli,
			spec, qos[rng.IntN(len(qos))], created, sched+math.Round(run), sched)
	}
	return f.Close()
}

func pick(rng *rand.Rand) kind {
	x := rng.Float64()
	for _, k := range kinds {
		if x < k.share {
			return k
		}
		x -= k.share
	}
	return kinds[len(kinds)-1]
}
