package coordinator

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// ClusterReader is what Collector reads of the store.
type ClusterReader interface {
	ListAgents(ctx context.Context, f store.AgentFilter) ([]domain.Agent, error)
	HeldByUser(ctx context.Context) (map[string]domain.Vec, error)
}

// Collector exports the cluster's state as the store holds it: per-agent
// capacity and occupancy per slot, and what each user's kernels hold. It
// reads the store when Prometheus scrapes, not per request or per
// handler run, so the figures cost one read per scrape (what users hold
// is summed in the database) and are as fresh as the scrape; every manager replica exports the same figures, which
// dashboards should aggregate with max, not sum.
type Collector struct {
	store   ClusterReader
	slots   *domain.Registry
	timeout time.Duration
	log     *slog.Logger

	capacity, occupied, kernels, alive, userHeld, up *prometheus.Desc
}

// NewCollector returns a collector over st; register it on the manager's
// registry. A nil log discards the read failures it reports.
func NewCollector(st ClusterReader, slots *domain.Registry, log *slog.Logger) *Collector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Collector{store: st, slots: slots, timeout: 5 * time.Second, log: log,
		capacity: prometheus.NewDesc("sokovan_agent_capacity",
			"What the agent offers per slot, in the slot's unit (cores, bytes, shares); agents not TERMINATED.",
			[]string{"agent", "resource_group", "slot"}, nil),
		occupied: prometheus.NewDesc("sokovan_agent_occupied",
			"What kernels placed on the agent hold per slot, in the slot's unit; agents not TERMINATED.",
			[]string{"agent", "resource_group", "slot"}, nil),
		kernels: prometheus.NewDesc("sokovan_agent_kernels",
			"Kernels holding resources on the agent.", []string{"agent", "resource_group"}, nil),
		alive: prometheus.NewDesc("sokovan_agent_alive",
			"1 while the agent is ALIVE, 0 once LOST.", []string{"agent", "resource_group"}, nil),
		userHeld: prometheus.NewDesc("sokovan_user_occupied",
			"What the user's kernels hold per slot (SCHEDULED to TERMINATING), in the slot's unit.",
			[]string{"user", "slot"}, nil),
		up: prometheus.NewDesc("sokovan_cluster_metrics_up",
			"1 when this scrape read the cluster's state from the store, 0 when the store failed (the figures above are then missing).",
			nil, nil),
	}
}

// Describe sends the descriptors of every series Collect may send.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.capacity, c.occupied, c.kernels, c.alive, c.userHeld, c.up} {
		ch <- d
	}
}

// Collect reads the store and sends the figures. A scrape has no context
// of its own, so the read is bounded by the collector's timeout instead.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if err := c.collect(ctx, ch); err != nil {
		c.log.Warn("cluster metrics: reading the store failed", "err", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
}

func (c *Collector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	agents, err := c.store.ListAgents(ctx, store.AgentFilter{Statuses: []domain.AgentStatus{domain.AgentAlive, domain.AgentLost}})
	if err != nil {
		return err
	}
	held, err := c.store.HeldByUser(ctx)
	if err != nil {
		return err
	}
	// Everything is read before anything is sent, so a failed read sends
	// no partial figures.
	for _, a := range agents {
		alive := 0.0
		if a.Status == domain.AgentAlive {
			alive = 1
		}
		ch <- prometheus.MustNewConstMetric(c.alive, prometheus.GaugeValue, alive, string(a.ID), a.ResourceGroup)
		ch <- prometheus.MustNewConstMetric(c.kernels, prometheus.GaugeValue, float64(a.KernelCount), string(a.ID), a.ResourceGroup)
		for i, t := range c.slots.Types() {
			id := domain.SlotID(i)
			ch <- prometheus.MustNewConstMetric(c.capacity, prometheus.GaugeValue, t.Kind.Float(a.Capacity.At(id)),
				string(a.ID), a.ResourceGroup, t.Name)
			ch <- prometheus.MustNewConstMetric(c.occupied, prometheus.GaugeValue, t.Kind.Float(a.Occupied.At(id)),
				string(a.ID), a.ResourceGroup, t.Name)
		}
	}
	for _, u := range slices.Sorted(maps.Keys(held)) {
		for i, t := range c.slots.Types() {
			ch <- prometheus.MustNewConstMetric(c.userHeld, prometheus.GaugeValue, t.Kind.Float(held[u].At(domain.SlotID(i))), u, t.Name)
		}
	}
	return nil
}
