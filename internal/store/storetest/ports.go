package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// testAgentAllowsCommand: what an agent says at registration about running
// a session's own command is kept, and a registration again replaces it.
func testAgentAllowsCommand(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	if a := f.agent("a1", "g", []string{"cpu", "8"}); a.AllowsCommand {
		t.Errorf("an agent that said nothing allows commands")
	}
	f.agent("a2", "g", []string{"cpu", "8"}, func(a *domain.Agent) { a.AllowsCommand = true })
	if a := f.getAgent("a2"); !a.AllowsCommand {
		t.Errorf("a2 read back without allows_command: %+v", a)
	}
	f.agent("a2", "g", []string{"cpu", "8"})
	if a := f.getAgent("a2"); a.AllowsCommand {
		t.Errorf("a2 registered again without it still allows commands")
	}
}

// testKernelServicePorts: the ports a kernel_started event carries are
// stored with the kernel and read back by every kernel read; an update
// without ports keeps them.
func testKernelServicePorts(t *testing.T, e Engine) {
	f := newFixture(t, e)
	f.group("g")
	f.agent("a1", "g", []string{"cpu", "8"})
	s := f.session("s1", "g", "alice", 1, []string{"cpu", "1"})
	id := s.Kernels[0].ID
	if s.Kernels[0].ServicePorts != nil {
		t.Errorf("a new kernel has ports %v", s.Kernels[0].ServicePorts)
	}
	f.schedule("g", s, "a1")
	f.kernel(id, domain.KernelScheduled, domain.KernelCreating)
	want := []domain.ServicePort{{Name: "http", Protocol: "http", Host: "127.0.0.1", Port: 41234}}
	k := f.kernel(id, domain.KernelCreating, domain.KernelRunning, func(u *store.KernelUpdate) { u.ServicePorts = want })
	if diff := cmp.Diff(want, k.ServicePorts); diff != "" {
		t.Errorf("UpdateKernel's answer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, f.get("s1").Kernels[0].ServicePorts); diff != "" {
		t.Errorf("GetSession (-want +got):\n%s", diff)
	}
	ks, err := f.s.ListKernels(f.ctx, store.KernelFilter{IDs: []domain.KernelID{id}})
	f.must(err, "list kernels")
	if len(ks) != 1 || !cmp.Equal(want, ks[0].ServicePorts) {
		t.Errorf("ListKernels: %+v", ks)
	}
	k = f.kernel(id, domain.KernelRunning, domain.KernelTerminating)
	if diff := cmp.Diff(want, k.ServicePorts); diff != "" {
		t.Errorf("an update without ports changed them (-want +got):\n%s", diff)
	}
}
