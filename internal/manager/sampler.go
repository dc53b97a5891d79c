package manager

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	clk "github.com/sokovan-go/sokovan/internal/clock"
	"github.com/sokovan-go/sokovan/internal/coordinator"
)

// Built-in sampler settings; the shared settings' utilisation_interval and
// utilisation_retention override them. Ten seconds resolves a session's
// start on the dashboard's hour view; a week covers the 7-day view.
const (
	DefaultSampleInterval  = 10 * time.Second
	DefaultSampleRetention = 7 * 24 * time.Hour
)

// SampleStore is what the sampler writes; every store.Store provides it.
type SampleStore interface {
	RecordUtilisation(ctx context.Context, now time.Time) error
	PruneUtilisation(ctx context.Context, before time.Time) (int64, error)
}

// Sampler records utilisation over time: every interval, while this
// manager holds the coordinator's lease, one sample of every group, and
// the samples past retention pruned. The lease keeps several managers on
// one database from sampling the same instant twice, as it keeps them
// from sweeping twice.
type Sampler struct {
	store     SampleStore
	lease     coordinator.Lease
	clock     coordinator.Clock
	log       *slog.Logger
	interval  atomic.Int64
	retention atomic.Int64
	reconf    chan struct{}
}

// NewSampler returns a sampler with the built-in settings. A nil lease is
// a manager alone, a nil clock the wall clock, a nil log discards.
func NewSampler(st SampleStore, lease coordinator.Lease, clock coordinator.Clock, log *slog.Logger) *Sampler {
	if clock == nil {
		clock = clk.Wall
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Sampler{store: st, lease: lease, clock: clock, log: log, reconf: make(chan struct{}, 1)}
	s.Configure(0, 0)
	return s
}

// Configure changes the interval and retention while running; zero takes
// the built-in value. A running loop resets its ticker.
func (s *Sampler) Configure(interval, retention time.Duration) {
	if interval <= 0 {
		interval = DefaultSampleInterval
	}
	if retention <= 0 {
		retention = DefaultSampleRetention
	}
	s.interval.Store(int64(interval))
	s.retention.Store(int64(retention))
	select {
	case s.reconf <- struct{}{}:
	default:
	}
}

// Sample takes one sample and prunes, if this manager holds the lease.
func (s *Sampler) Sample(ctx context.Context) error {
	if s.lease != nil && !s.lease.Held(ctx) {
		return nil
	}
	now := s.clock.Now()
	if err := s.store.RecordUtilisation(ctx, now); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	if _, err := s.store.PruneUtilisation(ctx, now.Add(-time.Duration(s.retention.Load()))); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	return nil
}

// Run samples every interval until ctx ends. A failed sample is logged
// and the next one tried: a gap in the chart is better than no sampler.
func (s *Sampler) Run(ctx context.Context) error {
	t := time.NewTicker(time.Duration(s.interval.Load()))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.reconf:
			t.Reset(time.Duration(s.interval.Load()))
		case <-t.C:
			if err := s.Sample(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("utilisation sample", "err", err)
			}
		}
	}
}
