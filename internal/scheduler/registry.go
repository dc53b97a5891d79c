package scheduler

import (
	"fmt"
	"slices"
	"sort"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/scheduler/selector"
	"github.com/sokovan-go/sokovan/internal/scheduler/sequence"
	"github.com/sokovan-go/sokovan/internal/scheduler/validate"
)

// Default plugin names, used when a group leaves them empty.
const (
	DefaultSequencer = "fifo"
	DefaultSelector  = "concentrated"
)

// Registry maps plugin names to plugins. It is built by a function, not by
// init side effects, so tests and operators see exactly what is registered.
type Registry struct {
	validators []framework.Validator
	sequencers map[string]framework.Sequencer
	selectors  map[string]framework.Selector
}

// NewRegistry returns the built-in plugins.
func NewRegistry() *Registry {
	r := &Registry{
		validators: validate.Defaults(),
		sequencers: make(map[string]framework.Sequencer),
		selectors:  make(map[string]framework.Selector),
	}
	for _, s := range []framework.Sequencer{sequence.FIFO{}, sequence.LIFO{}, sequence.DRF{}, sequence.FairShare{}} {
		r.sequencers[s.Name()] = s
	}
	for _, s := range []framework.Selector{selector.Concentrated{}, selector.Dispersed{}, selector.RoundRobin{}} {
		r.selectors[s.Name()] = s
	}
	return r
}

// SequencerNames lists the registered sequencers, sorted.
func (r *Registry) SequencerNames() []string { return sortedKeys(r.sequencers) }

// SelectorNames lists the registered selectors, sorted.
func (r *Registry) SelectorNames() []string { return sortedKeys(r.selectors) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CheckGroup reports whether the group names plugins and a head-of-line
// policy that exist, so the API can refuse a bad configuration up front.
func (r *Registry) CheckGroup(g domain.ResourceGroup) error {
	if _, err := r.sequencer(g.Sequencer); err != nil {
		return err
	}
	if _, err := r.selector(g.Selector); err != nil {
		return err
	}
	if g.HeadOfLine != "" {
		if _, err := domain.ParseHeadOfLine(string(g.HeadOfLine)); err != nil {
			return err
		}
	}
	return nil
}

func (r *Registry) sequencer(name string) (framework.Sequencer, error) {
	if name == "" {
		name = DefaultSequencer
	}
	s, ok := r.sequencers[name]
	if !ok {
		return nil, fmt.Errorf("unknown sequencer %q (want one of %v)", name, r.SequencerNames())
	}
	return s, nil
}

func (r *Registry) selector(name string) (framework.Selector, error) {
	if name == "" {
		name = DefaultSelector
	}
	s, ok := r.selectors[name]
	if !ok {
		return nil, fmt.Errorf("unknown selector %q (want one of %v)", name, r.SelectorNames())
	}
	return s, nil
}

// Validators returns the validators in the order they run.
func (r *Registry) Validators() []framework.Validator { return slices.Clone(r.validators) }
