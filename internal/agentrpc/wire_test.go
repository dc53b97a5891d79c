package agentrpc_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// eventsJSON is an event batch as agents and managers of earlier releases
// write it, and as the Redis bus carries it. Agents and managers of
// neighbouring releases talk to each other, so these bytes may not change.
const eventsJSON = `{"id":"a1","epoch":4,"events":[` +
	`{"kind":"image_pull_failed","image":"foo","reason":"not in the catalog","at":"2026-03-01T12:00:00Z"},` +
	`{"kind":"kernel_started","kernel":"k1","container_id":"c-1","at":"2026-03-01T12:00:01Z"},` +
	`{"kind":"kernel_terminated","kernel":"k1","exit_code":3,"reason":"exited with code 3","at":"2026-03-01T12:00:02Z"}]}`

func TestEventWireFormatIsUnchanged(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	code := 3
	batch := agentrpc.Events{ID: "a1", Epoch: 4, Events: []domain.KernelEvent{
		{Kind: domain.EventImagePullFailed, Image: "foo", Message: "not in the catalog", At: at},
		// Session and Reason stay on the agent: the manager knows the
		// session, and the wire carries the message only.
		{Kind: domain.EventKernelStarted, Kernel: "k1", Session: "s1", ContainerID: "c-1", At: at.Add(time.Second)},
		{Kind: domain.EventKernelTerminated, Kernel: "k1", Session: "s1", ExitCode: &code, Reason: domain.ReasonExited,
			Message: "exited with code 3", At: at.Add(2 * time.Second)},
	}}
	got, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(eventsJSON, string(got)); diff != "" {
		t.Errorf("encoded batch (-want +got):\n%s", diff)
	}

	var back agentrpc.Events
	if err := json.Unmarshal([]byte(eventsJSON), &back); err != nil {
		t.Fatal(err)
	}
	want := []domain.KernelEvent{
		{Kind: domain.EventImagePullFailed, Agent: "a1", Epoch: 4, Image: "foo", Message: "not in the catalog", At: at},
		{Kind: domain.EventKernelStarted, Agent: "a1", Epoch: 4, Kernel: "k1", ContainerID: "c-1", At: at.Add(time.Second)},
		{Kind: domain.EventKernelTerminated, Agent: "a1", Epoch: 4, Kernel: "k1", ExitCode: &code,
			Message: "exited with code 3", At: at.Add(2 * time.Second)},
	}
	if diff := cmp.Diff(want, back.Stamp()); diff != "" {
		t.Errorf("decoded and stamped events (-want +got):\n%s", diff)
	}
}

// TestKernelStartedCarriesServicePorts: the ports a kernel serves ride on
// kernel_started as one added field, which a manager of an earlier release
// ignores and which is absent when there are none (the batch above).
func TestKernelStartedCarriesServicePorts(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ev := domain.KernelEvent{Kind: domain.EventKernelStarted, Kernel: "k1", At: at,
		ServicePorts: []domain.ServicePort{{Name: "http", Protocol: "http", Host: "127.0.0.1", Port: 41234}}}
	got, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"kind":"kernel_started","kernel":"k1","at":"2026-03-01T12:00:00Z",` +
		`"service_ports":[{"name":"http","protocol":"http","host":"127.0.0.1","port":41234}]}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("encoded event (-want +got):\n%s", diff)
	}
	var back domain.KernelEvent
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ev, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// heartbeatJSON is a heartbeat as agents of earlier releases write it; an
// agent whose runtime reports nothing more must still write these bytes.
const heartbeatJSON = `{"id":"a1","epoch":2,"kernels":[{"id":"k1","running":true}]}`

// heartbeatNewJSON adds what later agents may send: capacity and waiting
// kernels, both omitted when empty so older managers see the bytes above.
const heartbeatNewJSON = `{"id":"a1","epoch":2,"kernels":[{"id":"k1","running":true}],` +
	`"capacity":{"cpu":"12"},"waiting":[{"id":"k2","note":"queued in SLURM: Resources"}]}`

func TestHeartbeatWireIsAdditive(t *testing.T) {
	t.Parallel()
	old := agentrpc.Heartbeat{ID: "a1", Epoch: 2, Kernels: []agentrpc.KernelReport{{ID: "k1", Running: true}}}
	got, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(heartbeatJSON, string(got)); diff != "" {
		t.Errorf("encoded heartbeat (-want +got):\n%s", diff)
	}
	hb := old
	hb.Capacity = map[string]string{"cpu": "12"}
	hb.Waiting = []agentrpc.WaitingKernel{{ID: "k2", Note: "queued in SLURM: Resources"}}
	got, err = json.Marshal(hb)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(heartbeatNewJSON, string(got)); diff != "" {
		t.Errorf("encoded heartbeat with the new fields (-want +got):\n%s", diff)
	}
}

// kernelSpecJSON is a kernel spec as managers of earlier releases wrote
// it, every field set, when the wire type listed its fields itself.
const kernelSpecJSON = `{"kernel":"k1","session":"s1","image":"sleep","slots":{"cpu":"2"},"cluster_role":"sub",` +
	`"cluster_idx":1,"cluster_size":2,"cluster_hosts":["main0","sub1"],"cluster_addrs":["10.0.0.1","10.0.0.2"],` +
	`"command":["sleep","9"],"env":{"A":"b"},"time_limit_ms":90000,` +
	`"devices":[{"device":"cuda0","index":0,"slot":"cuda.device","share":1000}],"serves":true}`

// A kernel spec keeps its wire names: one of an earlier release reads
// whole and encodes to the same object, and an empty one to the fields
// it always had. JSON objects are unordered, so they compare decoded.
func TestKernelSpecWire(t *testing.T) {
	t.Parallel()
	object := func(b []byte) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	var spec agentrpc.KernelSpec
	if err := json.Unmarshal([]byte(kernelSpecJSON), &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Kernel != "k1" || spec.Slots["cpu"] != "2" || spec.ClusterIdx != 1 || len(spec.ClusterAddrs) != 2 ||
		spec.TimeLimitMS != 90000 || len(spec.Devices) != 1 || !spec.Serves || spec.Env["A"] != "b" {
		t.Errorf("read %+v", spec)
	}
	got, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(object([]byte(kernelSpecJSON)), object(got)); diff != "" {
		t.Errorf("re-encoded spec (-earlier release +now):\n%s", diff)
	}
	got, err = json.Marshal(agentrpc.KernelSpec{KernelSpec: domain.KernelSpec{Kernel: "k1", Session: "s1", Image: "sleep"}})
	if err != nil {
		t.Fatal(err)
	}
	const empty = `{"kernel":"k1","session":"s1","image":"sleep","slots":null,"cluster_role":"","cluster_idx":0,"cluster_size":0,"cluster_hosts":null}`
	if diff := cmp.Diff(object([]byte(empty)), object(got)); diff != "" {
		t.Errorf("encoded spec (-earlier release +now):\n%s", diff)
	}
}

// Agents of the release before this one report readiness ("ready",
// "probes") in their heartbeats; this manager reads the rest of such a
// heartbeat as before.
func TestHeartbeatOfAnAgentWithProbesReads(t *testing.T) {
	t.Parallel()
	body := `{"id":"a1","epoch":2,"kernels":[{"id":"k1","running":true,"ready":false,` +
		`"probes":[{"status":"FAILED_THRESHOLD","failures":3,"message":"GET /healthz: 503"}]}]}`
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/agent/heartbeat", strings.NewReader(body))
	var hb agentrpc.Heartbeat
	if !agentrpc.ReadJSON(rec, req, &hb) {
		t.Fatalf("refused: %d %s", rec.Code, rec.Body)
	}
	want := agentrpc.Heartbeat{ID: "a1", Epoch: 2, Kernels: []agentrpc.KernelReport{{ID: "k1", Running: true}}}
	if diff := cmp.Diff(want, hb); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}
}

// A peer of a newer release adds fields; this one must still read the
// rest rather than refuse the message (a refused heartbeat cuts the agent
// off, a refused event batch loses its events).
func TestReadJSONIgnoresFieldsOfNewerPeers(t *testing.T) {
	t.Parallel()
	body := `{"id":"a1","epoch":2,"kernels":[{"id":"k1","running":true,"from_the_future":1}],"also_new":{"x":1}}`
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/agent/heartbeat", strings.NewReader(body))
	var hb agentrpc.Heartbeat
	if !agentrpc.ReadJSON(rec, req, &hb) {
		t.Fatalf("refused: %d %s", rec.Code, rec.Body)
	}
	if hb.ID != "a1" || hb.Epoch != 2 || len(hb.Kernels) != 1 || hb.Kernels[0].ID != "k1" || !hb.Kernels[0].Running {
		t.Errorf("read %+v", hb)
	}
}
