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
	r, e, err := scanAgentRow(sc)
	if err != nil {
		return r.a, err
	}
	a := r.a
	d.mu.Lock()
	defer d.mu.Unlock()
	a.Capacity = d.vec(&e, "capacity", r.capacity)
	a.Occupied = d.vec(&e, "occupied", r.occupied)
	a.Images = memo(d.images, r.images, &e, "images", slices.Clone[[]string])
	// The catalog is an image list too, and as alike across a fleet.
	a.Catalog = memo(d.images, r.catalog, &e, "catalog", slices.Clone[[]string])
	a.Labels = memo(d.labels, r.labels, &e, "labels", maps.Clone[map[string]string])
	if r.devices != "[]" && r.devices != "" {
		e.json("devices", r.devices, &a.Devices)
	}
	return emptyAsNil(a), e.err
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
