package agentgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/sokovan-go/sokovan/internal/agentrpc"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Store is what the gateway needs from the store: what agents report of
// themselves, and an agent's row to judge a report by.
type Store interface {
	store.AgentReports
	GetAgent(ctx context.Context, id domain.AgentID) (domain.Agent, error)
}

// Coordinator is what the gateway needs from the coordinator.
type Coordinator interface {
	HandleEvents(ctx context.Context, evs []domain.KernelEvent) error
	Settle(ctx context.Context, agent domain.AgentID, epoch int64, reports []coordinator.KernelReport) ([]domain.KernelID, error)
	AgentRestarted(ctx context.Context, agent domain.AgentID, epoch int64, present []domain.KernelID) error
	Alive(a domain.Agent) bool
	AgentAnswered(agent domain.AgentID)
	Mark()
}

var _ Coordinator = (*coordinator.Coordinator)(nil)

// Publisher hands agent event batches to the bus that every manager
// consumes; without one the gateway applies them itself.
type Publisher interface {
	Publish(ctx context.Context, payload []byte) error
}

// Gateway serves agents' calls to the manager under /v1/agent/.
type Gateway struct {
	bus   Publisher
	store Store
	coord Coordinator
	slots *domain.Registry
	token string
	now   func() time.Time
	log   *slog.Logger
	mux   *http.ServeMux
	// identity, when set, authenticates agents by their certificates.
	identity *Identity
	revoked  *revokedCache
}

// New returns the handler; token is the agent token.
func New(st Store, coord Coordinator, slots *domain.Registry, token string,
	now func() time.Time, log *slog.Logger) *Gateway {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{store: st, coord: coord, slots: slots, token: token, now: now, log: log, mux: http.NewServeMux()}
	g.mux.HandleFunc("POST /v1/agent/register", g.register)
	g.mux.HandleFunc("POST /v1/agent/heartbeat", g.heartbeat)
	g.mux.HandleFunc("POST /v1/agent/events", g.events)
	return g
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r, ok := g.authenticate(w, r)
	if ok {
		g.mux.ServeHTTP(w, r)
	}
}

func (g *Gateway) register(w http.ResponseWriter, r *http.Request) {
	var in agentrpc.Register
	if !agentrpc.ReadJSON(w, r, &in) || !sameAgent(w, r, in.ID) {
		return
	}
	capacity, err := g.slots.ParseSlots(in.Capacity)
	if err != nil {
		agentrpc.WriteError(w, http.StatusBadRequest, fmt.Errorf("capacity: %w", err))
		return
	}
	if in.ID == "" || in.Address == "" || in.ResourceGroup == "" {
		agentrpc.WriteError(w, http.StatusBadRequest, errors.New("id, address and resource_group are required"))
		return
	}
	if err := checkDevices(g.slots, in.Devices, capacity); err != nil {
		agentrpc.WriteError(w, http.StatusBadRequest, err)
		return
	}
	guard, err := g.mayRegister(r.Context(), in)
	if err != nil {
		if errors.Is(err, errAliveElsewhere) {
			g.log.Warn("agent registration refused", "agent", in.ID, "address", in.Address, "err", err)
			agentrpc.WriteError(w, http.StatusConflict, err)
			return
		}
		g.fail(w, "register", err)
		return
	}
	a, err := g.store.RegisterAgent(r.Context(), domain.Agent{
		ID: in.ID, ResourceGroup: in.ResourceGroup, Address: in.Address, KernelAddress: in.KernelAddress, Architecture: in.Architecture,
		Runtime: in.Runtime, Status: domain.AgentAlive, Schedulable: true, Capacity: capacity,
		MaxKernels: in.MaxKernels, Images: in.Images, Catalog: in.Catalog, AllowsCommand: in.AllowsCommand,
		Devices: in.Devices,
	}, g.now(), guard)
	if errors.Is(err, store.ErrGuardFailed) {
		// Another registration of this id came between the check and
		// this one; judged again, the agent's retry is refused or let in.
		agentrpc.WriteError(w, http.StatusConflict, fmt.Errorf("agent %s registered again meanwhile; retry: %w", in.ID, err))
		return
	}
	if errors.Is(err, store.ErrGroupRemoved) {
		// The agent's operator must point it at another group; retrying
		// changes nothing.
		agentrpc.WriteError(w, http.StatusConflict, fmt.Errorf("resource group %s was removed; "+
			"configure the agent with another group: %w", in.ResourceGroup, err))
		return
	}
	if err != nil {
		g.fail(w, "register", err)
		return
	}
	present := make([]domain.KernelID, 0, len(in.Kernels)+len(in.Waiting))
	for _, k := range in.Kernels {
		present = append(present, k.ID)
	}
	// A kernel still waiting in the runtime (a job queued in SLURM that a
	// restarted agent re-adopted) lives on and must not be settled as lost.
	for _, k := range in.Waiting {
		present = append(present, k.ID)
	}
	// What the previous incarnation ran and this one does not report has
	// died with it: settle that before anything else is believed.
	if err := g.coord.AgentRestarted(r.Context(), a.ID, a.Epoch, present); err != nil {
		g.fail(w, "register", err)
		return
	}
	destroy, err := g.settle(r.Context(), a.ID, a.Epoch, in.Kernels, in.Waiting)
	if err != nil {
		g.fail(w, "register", err)
		return
	}
	// A fresh registration is an answer: calls to it resume at once
	// rather than at its next probe.
	g.coord.AgentAnswered(a.ID)
	g.log.Info("agent registered", "agent", a.ID, "epoch", a.Epoch, "address", in.Address)
	g.coord.Mark()
	agentrpc.WriteJSON(w, http.StatusOK, agentrpc.Registered{Epoch: a.Epoch, Destroy: destroy})
}

// errAliveElsewhere refuses a registration that would take over a live
// agent from another address.
var errAliveElsewhere = errors.New("alive at another address")

// mayRegister refuses to let a registration from a new address take over an
// agent that is still alive. A new registration starts a new epoch, and the
// kernels the agent's previous incarnation ran that the newcomer does not
// report end in ERROR: anyone holding the shared agent token could
// otherwise end a live agent's sessions by registering its id from
// elsewhere. The same address is the real agent restarting and may always
// register again; a new address may take over once the agent is lost.
// The guard it returns holds the registration to the agent as judged here,
// so two registrations racing from new addresses cannot both pass.
func (g *Gateway) mayRegister(ctx context.Context, in agentrpc.Register) (store.RegisterGuard, error) {
	prev, err := g.store.GetAgent(ctx, in.ID)
	if errors.Is(err, store.ErrNotFound) {
		return store.RegisterGuard{}, nil
	}
	if err != nil {
		return store.RegisterGuard{}, err
	}
	guard := store.RegisterGuard{Epoch: prev.Epoch}
	if prev.Address == in.Address || !g.coord.Alive(prev) {
		return guard, nil
	}
	return guard, fmt.Errorf("agent %s is %w %s (last heartbeat %s); a registration from %s is refused until it is lost",
		in.ID, errAliveElsewhere, prev.Address, prev.LastHeartbeat.UTC().Format(time.RFC3339), in.Address)
}

func (g *Gateway) heartbeat(w http.ResponseWriter, r *http.Request) {
	var in agentrpc.Heartbeat
	if !agentrpc.ReadJSON(w, r, &in) || !sameAgent(w, r, in.ID) {
		return
	}
	err := g.store.Heartbeat(r.Context(), in.ID, in.Epoch, g.now())
	if errors.Is(err, store.ErrGuardFailed) || errors.Is(err, store.ErrNotFound) {
		agentrpc.WriteJSON(w, http.StatusOK, agentrpc.HeartbeatReply{Reregister: true})
		return
	}
	if err != nil {
		g.fail(w, "heartbeat", err)
		return
	}
	g.refreshCapacity(r.Context(), in)
	g.noteWaiting(r.Context(), in)
	destroy, err := g.settle(r.Context(), in.ID, in.Epoch, in.Kernels, in.Waiting)
	if err != nil {
		g.fail(w, "heartbeat", err)
		return
	}
	reply := agentrpc.HeartbeatReply{Destroy: destroy, Renew: g.stale(r)}
	if g.identity != nil {
		reply.Trusted = g.identity.CA.Fingerprints()
	}
	agentrpc.WriteJSON(w, http.StatusOK, reply)
}

// refreshCapacity keeps the capacity a heartbeat carries when it changed,
// and wakes the scheduler so grown room is used. What is occupied stays:
// a capacity below it evicts nothing, the scheduler just finds no room.
// Failures are logged, not answered: the heartbeat's liveness matters
// more, and the next heartbeat carries the capacity again.
func (g *Gateway) refreshCapacity(ctx context.Context, in agentrpc.Heartbeat) {
	if in.Capacity == nil {
		return
	}
	capacity, err := g.slots.ParseSlots(in.Capacity)
	if err == nil {
		var changed bool
		changed, err = g.store.SetAgentCapacity(ctx, in.ID, in.Epoch, capacity)
		if changed {
			g.log.Info("agent capacity changed", "agent", in.ID, "capacity", in.Capacity)
			g.coord.Mark()
		}
	}
	if err != nil {
		g.log.Warn("agent capacity not updated", "agent", in.ID, "err", err)
	}
}

// noteWaiting records why kernels the agent took have not started, for
// `why` and progress. Like capacity, a failure is logged and retried by
// the next heartbeat.
func (g *Gateway) noteWaiting(ctx context.Context, in agentrpc.Heartbeat) {
	notes := make(map[domain.KernelID]string, len(in.Waiting))
	for _, k := range in.Waiting {
		if k.Note != "" {
			notes[k.ID] = k.Note
		}
	}
	if len(notes) == 0 {
		return
	}
	if _, err := g.store.NoteWaitingKernels(ctx, in.ID, notes); err != nil {
		g.log.Warn("waiting kernels' notes not recorded", "agent", in.ID, "err", err)
	}
}

// settle hands a kernel report to the coordinator, which applies what it
// implies and says which kernels to destroy.
func (g *Gateway) settle(ctx context.Context, agent domain.AgentID, epoch int64, kernels []agentrpc.KernelReport,
	waiting []agentrpc.WaitingKernel) ([]domain.KernelID, error) {
	reports := make([]coordinator.KernelReport, len(kernels), len(kernels)+len(waiting))
	for i, k := range kernels {
		reports[i] = coordinator.KernelReport{ID: k.ID, Running: k.Running, ExitCode: k.ExitCode, Reason: k.Reason,
			ServicePorts: k.ServicePorts}
	}
	// Kernels still queued are checked too: one whose session ended (a
	// destroy call lost) is cancelled now, not when SLURM starts it.
	for _, w := range waiting {
		reports = append(reports, coordinator.KernelReport{ID: w.ID, Waiting: true})
	}
	return g.coord.Settle(ctx, agent, epoch, reports)
}

// UseBus makes the gateway publish event batches instead of applying them.
func (g *Gateway) UseBus(p Publisher) { g.bus = p }

func (g *Gateway) events(w http.ResponseWriter, r *http.Request) {
	var in agentrpc.Events
	if !agentrpc.ReadJSON(w, r, &in) || !sameAgent(w, r, in.ID) {
		return
	}
	if g.bus != nil {
		payload, err := json.Marshal(in)
		if err == nil {
			err = g.bus.Publish(r.Context(), payload)
		}
		if err != nil {
			// The agent keeps the batch and sends it again.
			agentrpc.WriteError(w, http.StatusServiceUnavailable, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err := g.apply(r.Context(), in); err != nil {
		g.fail(w, "events", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ApplyBatch applies one published batch; it is the bus's handler, so an
// error leaves the batch pending for another try.
func (g *Gateway) ApplyBatch(ctx context.Context, payload []byte) error {
	var in agentrpc.Events
	if err := json.Unmarshal(payload, &in); err != nil {
		g.log.Error("dropping an undecodable event batch", "err", err)
		return nil // retrying cannot fix it
	}
	return g.apply(ctx, in)
}

func (g *Gateway) apply(ctx context.Context, in agentrpc.Events) error {
	evs := make([]domain.KernelEvent, 0, len(in.Events))
	for _, e := range in.Stamp() {
		if _, err := domain.ParseEventKind(string(e.Kind)); err != nil {
			// Skip what this manager does not know rather than refuse the
			// batch, so a newer agent's extra events cannot wedge the queue.
			g.log.Warn("unknown agent event", "agent", in.ID, "kind", e.Kind)
			continue
		}
		evs = append(evs, e)
	}
	err := g.coord.HandleEvents(ctx, evs)
	if errors.Is(err, store.ErrNotFound) {
		return nil // an agent the manager does not know; it will re-register
	}
	return err
}

func (g *Gateway) fail(w http.ResponseWriter, what string, err error) {
	g.log.Error("agent gateway", "call", what, "err", err)
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrConflict):
		code = http.StatusBadRequest
	case errors.Is(err, store.ErrUnavailable):
		code = http.StatusServiceUnavailable
	}
	agentrpc.WriteError(w, code, fmt.Errorf("%s: %w", what, err))
}
