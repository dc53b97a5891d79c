package simulate

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Importers read public trace layouts into workloads. Columns are found by
// header name, so extra or reordered columns do not matter.

// ImportStats says what an import kept and why it dropped the rest.
type ImportStats struct {
	Rows    int            `json:"rows"`
	Kept    int            `json:"kept"`
	Dropped map[string]int `json:"dropped,omitempty"`
}

func (s *ImportStats) drop(why string) {
	if s.Dropped == nil {
		s.Dropped = map[string]int{}
	}
	s.Dropped[why]++
}

// ImportOpenB reads the pod list of Alibaba's cluster-trace-gpu-v2023
// (openb_pod_list_*.csv): name, cpu_milli, memory_mib, num_gpu, gpu_milli,
// creation_time, scheduled_time, deletion_time (seconds). A pod becomes a
// one-kernel batch session submitted at its creation, running from
// scheduled to deletion, asking cpu_milli/1000 CPUs, memory_mib MiB and
// num_gpu × gpu_milli/1000 of gpuSlot (GPU sharing is why a pod may ask a
// fraction). The trace names no users, so the pod's qos class is the user
// and its gpu_spec (when present) the project. Pods never scheduled or
// never deleted (an empty scheduled_time or deletion_time) have no run
// time and are dropped, and counted.
func ImportOpenB(r io.Reader, reg *domain.Registry, gpuSlot string) (Workload, ImportStats, error) {
	rows, col, err := readCSV(r, "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time",
		"scheduled_time", "deletion_time")
	if err != nil {
		return Workload{}, ImportStats{}, fmt.Errorf("openb: %w", err)
	}
	st := ImportStats{}
	var out []Session
	first := math.Inf(1)
	for n, row := range rows {
		line := n + 2 // the header is line 1
		st.Rows++
		get := func(name string) string { return col.get(row, name) }
		num := func(name string) (float64, error) {
			v := strings.TrimSpace(get(name))
			if v == "" {
				return math.NaN(), nil
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsInf(f, 0) {
				return 0, &LineError{Line: line, Field: name, Err: fmt.Errorf("%q is not a number", v)}
			}
			return f, nil
		}
		var f [7]float64
		for i, name := range []string{"cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time", "scheduled_time", "deletion_time"} {
			if f[i], err = num(name); err != nil {
				return Workload{}, st, fmt.Errorf("openb: %w", err)
			}
		}
		cpu, mem, ngpu, gmilli, created, sched, deleted := f[0], f[1], f[2], f[3], f[4], f[5], f[6]
		switch {
		case math.IsNaN(created):
			st.drop("no creation_time")
			continue
		// Times count from the trace's start, so 0 is a time like any
		// other (openb-pod-0000 is created and scheduled at 0): only an
		// empty cell says the pod never got there.
		case math.IsNaN(sched):
			st.drop("never scheduled")
			continue
		case math.IsNaN(deleted):
			st.drop("never deleted")
			continue
		case deleted < sched || sched < created:
			st.drop("times out of order")
			continue
		}
		res := map[string]string{}
		if !math.IsNaN(cpu) && cpu > 0 {
			res["cpu"] = strconv.FormatFloat(cpu/1000, 'f', -1, 64)
		}
		if !math.IsNaN(mem) && mem > 0 {
			res["mem"] = strconv.FormatFloat(mem, 'f', 0, 64) + "m"
		}
		if !math.IsNaN(ngpu) && ngpu > 0 {
			share := 1.0
			if !math.IsNaN(gmilli) && gmilli > 0 {
				share = gmilli / 1000
			}
			res[gpuSlot] = strconv.FormatFloat(ngpu*share, 'f', 3, 64)
		}
		user := strings.TrimSpace(col.get(row, "qos"))
		if user == "" {
			user = "openb"
		}
		project := strings.TrimSpace(col.get(row, "gpu_spec"))
		id := sanitiseID(get("name"), len(out)+1)
		out = append(out, Session{ID: id, Submit: created, User: user, Project: project, Type: "batch",
			Resources: res, Duration: deleted - sched})
		first = min(first, created)
		st.Kept++
	}
	for i := range out {
		out[i].Submit -= first
	}
	w, err := NewWorkload(out, reg)
	if err != nil {
		return Workload{}, st, fmt.Errorf("openb: %w", err)
	}
	return w, st, nil
}

// ImportHelios reads a Helios cluster_log.csv (SenseTime, Slurm-style):
// job_id, user, vc, gpu_num, cpu_num, node_num, state, submit_time,
// start_time, end_time. Times are "2006-01-02 15:04:05". A job becomes a
// batch session of node_num kernels sharing its GPUs and CPUs evenly; its
// virtual cluster is the project; COMPLETED jobs exit 0, others 1. Jobs
// that never started are dropped, and counted.
func ImportHelios(r io.Reader, reg *domain.Registry, gpuSlot string) (Workload, ImportStats, error) {
	rows, col, err := readCSV(r, "job_id", "user", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
		"start_time", "end_time")
	if err != nil {
		return Workload{}, ImportStats{}, fmt.Errorf("helios: %w", err)
	}
	const layout = "2006-01-02 15:04:05"
	st := ImportStats{}
	var out []Session
	var first time.Time
	for n, row := range rows {
		line := n + 2
		st.Rows++
		ts := make([]time.Time, 3)
		missing := false
		for i, name := range []string{"submit_time", "start_time", "end_time"} {
			v := strings.TrimSpace(col.get(row, name))
			if v == "" {
				missing = true
				continue
			}
			t, err := time.Parse(layout, v)
			if err != nil {
				return Workload{}, st, fmt.Errorf("helios: %w", &LineError{Line: line, Field: name, Err: fmt.Errorf("%q is not a time like %s", v, layout)})
			}
			ts[i] = t
		}
		if missing || ts[2].Before(ts[1]) || ts[1].Before(ts[0]) {
			st.drop("never started or times missing")
			continue
		}
		ints := make([]int, 3)
		for i, name := range []string{"gpu_num", "cpu_num", "node_num"} {
			v := strings.TrimSpace(col.get(row, name))
			x, err := strconv.Atoi(v)
			if err != nil || x < 0 {
				return Workload{}, st, fmt.Errorf("helios: %w", &LineError{Line: line, Field: name, Err: fmt.Errorf("%q is not a whole number", v)})
			}
			ints[i] = x
		}
		gpus, cpus, nodes := ints[0], ints[1], max(ints[2], 1)
		if nodes > maxClusterSize {
			st.drop("more nodes than a session may have")
			continue
		}
		res := map[string]string{}
		if cpus > 0 {
			res["cpu"] = strconv.FormatFloat(float64(cpus)/float64(nodes), 'f', 3, 64)
		}
		if gpus > 0 {
			res[gpuSlot] = strconv.FormatFloat(float64(gpus)/float64(nodes), 'f', 3, 64)
		}
		code := 0
		if s := strings.TrimSpace(col.get(row, "state")); s != "COMPLETED" {
			code = 1
		}
		if first.IsZero() || ts[0].Before(first) {
			first = ts[0]
		}
		out = append(out, Session{ID: sanitiseID(col.get(row, "job_id"), len(out)+1), Submit: float64(ts[0].Unix()),
			User: strings.TrimSpace(col.get(row, "user")), Project: strings.TrimSpace(col.get(row, "vc")), Type: "batch",
			Resources: res, ClusterSize: nodes, Duration: ts[2].Sub(ts[1]).Seconds(), ExitCode: code})
		st.Kept++
	}
	for i := range out {
		out[i].Submit -= float64(first.Unix())
	}
	w, err := NewWorkload(out, reg)
	if err != nil {
		return Workload{}, st, fmt.Errorf("helios: %w", err)
	}
	return w, st, nil
}

type columns map[string]int

func (c columns) get(row []string, name string) string {
	i, ok := c[name]
	if !ok || i >= len(row) {
		return ""
	}
	return row[i]
}

func readCSV(r io.Reader, required ...string) ([][]string, columns, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil, errors.New("empty file")
	}
	if err != nil {
		return nil, nil, err
	}
	col := columns{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, name := range required {
		if _, ok := col[name]; !ok {
			return nil, nil, fmt.Errorf("line 1: no column %q", name)
		}
	}
	rows, err := cr.ReadAll()
	return rows, col, err
}

// sanitiseID keeps a trace's job name when it is a valid session id, else
// numbers the job.
func sanitiseID(name string, n int) string {
	name = strings.TrimSpace(name)
	ok := name != "" && len(name) <= maxIDLen && strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) < 0
	if ok {
		return name
	}
	return fmt.Sprintf("job%06d", n)
}
