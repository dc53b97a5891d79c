package simulate_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/simulate"
)

// A sample in the layout of cluster-trace-gpu-v2023's openb_pod_list,
// written here: a fractional-GPU pod, a two-GPU pod, a CPU pod, one never
// scheduled and one still running at the end of the trace.
const openbSample = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,12000,16384,1,500,V100M32,LS,Succeeded,100,1100,130
openb-pod-0001,8000,32768,2,1000,,BE,Succeeded,150,3150,150
openb-pod-0002,4000,8192,0,0,,BE,Succeeded,200,260,205
openb-pod-0003,4000,8192,1,1000,,LS,Pending,300,,
openb-pod-0004,4000,8192,1,1000,,LS,Running,400,,410
`

func TestImportOpenB(t *testing.T) {
	t.Parallel()
	w, st, err := simulate.ImportOpenB(strings.NewReader(openbSample), domain.DefaultRegistry(), "cuda.shares")
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 5 || st.Kept != 3 || st.Dropped["never scheduled"] != 1 || st.Dropped["never deleted"] != 1 {
		t.Errorf("stats %+v, want 5 rows, 3 kept, one never scheduled, one never deleted", st)
	}
	type brief struct {
		ID        string
		Submit    float64
		Duration  float64
		User      string
		Project   string
		Resources map[string]string
	}
	var got []brief
	for _, s := range w.Sessions {
		got = append(got, brief{s.ID, s.Submit, s.Duration, s.User, s.Project, s.Resources})
	}
	want := []brief{
		// Submitted at creation (the first creation is time zero), run
		// from scheduled to deleted.
		{"openb-pod-0000", 0, 970, "LS", "V100M32", map[string]string{"cpu": "12", "mem": "16384m", "cuda.shares": "0.500"}},
		{"openb-pod-0001", 50, 3000, "BE", "default", map[string]string{"cpu": "8", "mem": "32768m", "cuda.shares": "2.000"}},
		{"openb-pod-0002", 100, 55, "BE", "default", map[string]string{"cpu": "4", "mem": "8192m"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
}

// The trace counts seconds from its start, and its first pod is created
// and scheduled at 0: an empty scheduled_time, not 0, is what marks a pod
// never scheduled. Dropping the pod at 0 would also move the simulation's
// start to the next creation, here 4.9 days later.
func TestImportOpenBTimeZero(t *testing.T) {
	t.Parallel()
	const sample = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,8000,16384,1,1000,,LS,Running,0,7200,0
openb-pod-0001,4000,8192,1,250,,BE,Running,423000,430000,423010
openb-pod-0002,4000,8192,1,1000,,LS,Pending,424000,430000,
`
	w, st, err := simulate.ImportOpenB(strings.NewReader(sample), domain.DefaultRegistry(), "cuda.shares")
	if err != nil {
		t.Fatal(err)
	}
	type brief struct {
		ID       string
		Submit   float64
		Duration float64
	}
	var got []brief
	for _, s := range w.Sessions {
		got = append(got, brief{s.ID, s.Submit, s.Duration})
	}
	want := []brief{
		{"openb-pod-0000", 0, 7200},      // 7200 - 0
		{"openb-pod-0001", 423000, 6990}, // 430000 - 423010
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
	if st.Kept != 2 || st.Dropped["never scheduled"] != 1 {
		t.Errorf("stats %+v, want 2 kept and the pending pod dropped as never scheduled", st)
	}
}

func TestImportOpenBNamesBadCell(t *testing.T) {
	t.Parallel()
	bad := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\np,lots,1,0,0,1,2,1\n"
	_, _, err := simulate.ImportOpenB(strings.NewReader(bad), domain.DefaultRegistry(), "cuda.shares")
	if err == nil || !strings.Contains(err.Error(), "line 2: field cpu_milli") {
		t.Fatalf("got %v, want an error naming line 2 and cpu_milli", err)
	}
	_, _, err = simulate.ImportOpenB(strings.NewReader("name,cpu_milli\n"), domain.DefaultRegistry(), "cuda.shares")
	if err == nil || !strings.Contains(err.Error(), `no column "memory_mib"`) {
		t.Fatalf("got %v, want a missing column named", err)
	}
}

// A sample in Helios' cluster_log.csv layout.
const heliosSample = `job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
j1,uA,vc1,8,32,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:10,2020-04-01 01:00:10,3600,10
j2,uB,vc2,16,64,2,FAILED,2020-04-01 00:01:00,2020-04-01 00:02:00,2020-04-01 00:03:00,60,60
j3,uB,vc2,1,4,1,CANCELLED,2020-04-01 00:02:00,,,0,0
`

func TestImportHelios(t *testing.T) {
	t.Parallel()
	w, st, err := simulate.ImportHelios(strings.NewReader(heliosSample), domain.DefaultRegistry(), "cuda.shares")
	if err != nil {
		t.Fatal(err)
	}
	if st.Kept != 2 || st.Rows != 3 {
		t.Errorf("stats %+v, want 2 of 3 kept", st)
	}
	s := w.Sessions[1]
	if s.ID != "j2" || s.Submit != 60 || s.Duration != 60 || s.ClusterSize != 2 || s.ExitCode != 1 ||
		s.Resources["cuda.shares"] != "8.000" || s.Project != "vc2" {
		t.Errorf("j2 imported as %+v", s)
	}
}

// testdata/philly_sample.json is written for this test in the layout of
// Philly's cluster_job_log: a job retried on other machines, one killed
// before it started, one whose attempt never ended, a single-GPU and a
// 4-GPU job.
func TestImportPhilly(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/philly_sample.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, st, err := simulate.ImportPhilly(f, domain.DefaultRegistry(), "cuda.shares")
	if err != nil {
		t.Fatal(err)
	}
	wantStats := simulate.ImportStats{Rows: 5, Kept: 3, Dropped: map[string]int{"never started": 1,
		"last attempt never started or never ended": 1}}
	if diff := cmp.Diff(wantStats, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	type got struct {
		ID, User, Project, GPUs string
		Submit, Duration        float64
		Size, Exit              int
	}
	var gs []got
	for _, s := range w.Sessions {
		gs = append(gs, got{s.ID, s.User, s.Project, s.Resources["cuda.shares"], s.Submit, s.Duration, s.ClusterSize, s.ExitCode})
	}
	want := []got{
		{"application_1506638472019_0005", "u3", "vc-a", "4.000", 0, 1800, 1, 1},
		{"application_1506638472019_0001", "u1", "vc-a", "1.000", 60, 3600, 1, 0},
		// Its last attempt: two machines of 8 GPUs, 08:20 to 08:50.
		{"application_1506638472019_0002", "u2", "vc-b", "8.000", 360, 1800, 2, 1},
	}
	if diff := cmp.Diff(want, gs); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
}

func TestImportPhillyRefuses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want string }{
		{"not an array", `{"jobid": "j1"}`, "want a JSON array of jobs"},
		{"empty file", ``, "want a JSON array of jobs"},
		{"bad time", `[{"jobid": "j1", "user": "u", "submitted_time": "yesterday", "attempts": []}]`,
			`job j1: field submitted_time: "yesterday" is not a time like 2006-01-02 15:04:05`},
		{"wrong type", `[{"jobid": "j1", "attempts": 3}]`, "philly: job 1:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := simulate.ImportPhilly(strings.NewReader(tt.in), domain.DefaultRegistry(), "cuda.shares")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
