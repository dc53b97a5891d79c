package codec

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// agentMemoCap bounds each of AgentDecoder's memos; past it a memo starts
// over. Capacities, occupancies, image lists and label sets repeat across
// a fleet, so a few thousand texts cover one.
const agentMemoCap = 4096

// AgentDecoder is ScanAgent with a memo of the JSON columns' decoded
// values, keyed by their text. A scheduling round reads every agent of its
// group, and decoding the same few capacity and image texts over again was
// most of that read. Keyed by the exact text, a memo cannot serve a value
// the row does not hold; what it returns is a copy, so a caller may change
// it. Safe for concurrent use.
type AgentDecoder struct {
	reg    *domain.Registry
	mu     sync.Mutex
	slots  map[string]domain.Vec
	images map[string][]string
	labels map[string]map[string]string
}

// NewAgentDecoder returns a decoder for reg's slots.
func NewAgentDecoder(reg *domain.Registry) *AgentDecoder {
	return &AgentDecoder{reg: reg, slots: map[string]domain.Vec{}, images: map[string][]string{},
		labels: map[string]map[string]string{}}
}

// Scan reads one row of AgentColumns, as ScanAgent does.
func (d *AgentDecoder) Scan(sc Scanner) (domain.Agent, error) {
	var (
		a                  domain.Agent
		id, status         string
		capacity, occupied string
		images, labels     string
		catalog            string
		heartbeat          rawTime
	)
	if err := sc.Scan(&id, &a.ResourceGroup, &a.Address, &a.Architecture, &a.Runtime, &status,
		&a.Schedulable, &capacity, &occupied, &a.MaxKernels, &a.KernelCount, &heartbeat, &a.Epoch,
		&images, &labels, &a.AllowsCommand, &catalog); err != nil {
		return a, err
	}
	a.ID = domain.AgentID(id)
	e := rowErr{table: "agents", id: id}
	var err error
	a.Status, err = domain.ParseAgentStatus(status)
	e.fail("status", err)
	a.LastHeartbeat = e.time("last_heartbeat", heartbeat)
	d.mu.Lock()
	defer d.mu.Unlock()
	a.Capacity = d.vec(&e, "capacity", capacity)
	a.Occupied = d.vec(&e, "occupied", occupied)
	a.Images = memo(d.images, images, &e, "images", slices.Clone[[]string])
	a.Labels = memo(d.labels, labels, &e, "labels", maps.Clone[map[string]string])
	// The catalog is an image list too, and as alike across a fleet.
	a.Catalog = memo(d.images, catalog, &e, "catalog", slices.Clone[[]string])
	if len(a.Images) == 0 {
		a.Images = nil
	}
	if len(a.Catalog) == 0 {
		a.Catalog = nil
	}
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	return a, e.err
}

func (d *AgentDecoder) vec(e *rowErr, column, s string) domain.Vec {
	if v, ok := d.slots[s]; ok {
		return v.Clone()
	}
	v := e.slots(column, d.reg, s)
	if e.err == nil {
		if len(d.slots) >= agentMemoCap {
			clear(d.slots)
		}
		d.slots[s] = v.Clone()
	}
	return v
}

// memo decodes a JSON column through m; only values that decoded are kept.
func memo[T any](m map[string]T, s string, e *rowErr, column string, clone func(T) T) T {
	if v, ok := m[s]; ok {
		return clone(v)
	}
	var v T
	err := json.Unmarshal([]byte(s), &v)
	e.fail(column, err)
	if err == nil {
		if len(m) >= agentMemoCap {
			clear(m)
		}
		m[s] = clone(v)
	}
	return v
}
