package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// Settings are the shared knobs. Durations are Go durations ("500ms",
// "30s"); a zero or missing field keeps the built-in default.
type Settings struct {
	CycleInterval    Duration `json:"cycle_interval,omitempty"`
	SweepInterval    Duration `json:"sweep_interval,omitempty"`
	CallTimeout      Duration `json:"call_timeout,omitempty"`
	HeartbeatTimeout Duration `json:"heartbeat_timeout,omitempty"`
	LostGrace        Duration `json:"lost_grace,omitempty"`
	// ChangeRetention is how long the event feed keeps changes (24h).
	ChangeRetention Duration `json:"change_retention,omitempty"`
	// Job timeouts (seed 003): STARTING with one allocation (5m),
	// COMPLETING before COMPLETED (30s), COMPLETED before EXPIRED (24h).
	JobStartingTimeout   Duration `json:"job_starting_timeout,omitempty"`
	JobCompletingTimeout Duration `json:"job_completing_timeout,omitempty"`
	JobRetention         Duration `json:"job_retention,omitempty"`
	// UsageRetention is how long the hourly usage history is kept (2160h).
	UsageRetention Duration `json:"usage_retention,omitempty"`
	// UtilisationInterval is how often the leading manager samples
	// utilisation (10s); UtilisationRetention how long samples are kept
	// (168h).
	UtilisationInterval  Duration `json:"utilisation_interval,omitempty"`
	UtilisationRetention Duration `json:"utilisation_retention,omitempty"`
	// GroupDefaults are what a resource group leaves unset: max_retries
	// for a group whose own is 0, the timeouts for groups created later
	// (coordinator.GroupDefaults).
	GroupDefaults GroupDefaults `json:"group_defaults,omitzero"`
}

// GroupDefaults are the defaults for resource groups.
type GroupDefaults struct {
	MaxRetries int `json:"max_retries,omitempty"`
	// Timeouts by status name (pending, scheduled, preparing, prepared,
	// creating, terminating).
	Timeouts map[string]Duration `json:"timeouts,omitempty"`
}

// Duration is a time.Duration written as a Go duration string.
type Duration time.Duration

// MarshalJSON writes "90s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "90s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

var timeoutNames = []string{"pending", "scheduled", "preparing", "prepared", "creating", "terminating"}

// Parse reads settings strictly: unknown fields and bad values are errors
// naming the field, so a typo in shared configuration is refused rather
// than silently ignored.
func Parse(raw []byte) (Settings, error) {
	var s Settings
	if len(bytes.TrimSpace(raw)) == 0 {
		return s, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Settings{}, fmt.Errorf("config: %w", fieldOf(raw, err))
	}
	for name := range s.GroupDefaults.Timeouts {
		known := false
		for _, n := range timeoutNames {
			known = known || n == name
		}
		if !known {
			return Settings{}, fmt.Errorf("config: group_defaults.timeouts.%s: unknown status (want one of %s)", name, strings.Join(timeoutNames, ", "))
		}
	}
	if s.GroupDefaults.MaxRetries < 0 {
		return Settings{}, errors.New("config: group_defaults.max_retries must not be negative")
	}
	return s, nil
}

// fieldOf names the top-level field a decoding error came from, since a
// custom unmarshaler's error does not carry it.
func fieldOf(raw []byte, err error) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return err
	}
	for name, val := range fields {
		var probe Settings
		one, _ := json.Marshal(map[string]json.RawMessage{name: val})
		dec := json.NewDecoder(bytes.NewReader(one))
		dec.DisallowUnknownFields()
		if ferr := dec.Decode(&probe); ferr != nil {
			if strings.Contains(ferr.Error(), name) {
				return ferr
			}
			return fmt.Errorf("%s: %w", name, ferr)
		}
	}
	return err
}

// Source yields settings now and whenever they change.
type Source interface {
	// Watch calls apply with the current settings, then again after every
	// change, until ctx ends. Invalid settings are logged and skipped: the
	// last good ones stay in force.
	Watch(ctx context.Context, apply func(Settings)) error
}

// Etcd is a Source reading one key holding the JSON document.
type Etcd struct {
	cli *clientv3.Client
	key string
	log *slog.Logger
}

// OpenEtcd connects to endpoints ("127.0.0.1:2379,…"); key defaults to
// "/sokovan/config".
func OpenEtcd(endpoints, key string, log *slog.Logger) (*Etcd, error) {
	if key == "" {
		key = "/sokovan/config"
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: 5 * time.Second,
		Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("config: etcd: %w", err)
	}
	return &Etcd{cli: cli, key: key, log: log}, nil
}

// Close disconnects.
func (e *Etcd) Close() error { return e.cli.Close() }

// Key is the settings key.
func (e *Etcd) Key() string { return e.key }

// Put stores settings (for operators and tests).
func (e *Etcd) Put(ctx context.Context, s Settings) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = e.cli.Put(ctx, e.key, string(raw))
	return err
}

// Watch implements Source.
func (e *Etcd) Watch(ctx context.Context, apply func(Settings)) error {
	resp, err := e.cli.Get(ctx, e.key)
	if err != nil {
		return fmt.Errorf("config: read %s: %w", e.key, err)
	}
	rev := resp.Header.Revision
	if len(resp.Kvs) > 0 {
		e.deliver(resp.Kvs[0].Value, apply)
	} else {
		apply(Settings{})
	}
	for {
		wch := e.cli.Watch(ctx, e.key, clientv3.WithRev(rev+1))
		for wr := range wch {
			if err := wr.Err(); err != nil {
				e.log.Warn("config: watch", "err", err)
				break
			}
			for _, ev := range wr.Events {
				rev = ev.Kv.ModRevision
				if ev.Type == clientv3.EventTypeDelete {
					apply(Settings{})
					continue
				}
				e.deliver(ev.Kv.Value, apply)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		time.Sleep(time.Second) // the watch broke; resume from rev
	}
}

func (e *Etcd) deliver(raw []byte, apply func(Settings)) {
	s, err := Parse(raw)
	if err != nil {
		e.log.Error("config: refusing invalid settings; keeping the last good ones", "err", err)
		return
	}
	apply(s)
}

// Leader is an etcd election: Held reports whether this manager leads.
// Leadership lives on a lease with a short TTL, so a killed manager's turn
// ends within the TTL and another takes it; a manager whose own session
// expired campaigns again.
type Leader struct {
	leading atomic.Bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// Elect joins the election named prefix with a lease of ttl seconds; the
// campaign runs in the background until Close.
func (e *Etcd) Elect(prefix, id string, ttl int) *Leader {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Leader{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			if err := l.term(ctx, e.cli, prefix, id, ttl); err != nil && ctx.Err() == nil {
				e.log.Warn("config: election", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}
	}()
	return l
}

// term campaigns once and leads until the session ends.
func (l *Leader) term(ctx context.Context, cli *clientv3.Client, prefix, id string, ttl int) error {
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl), concurrency.WithContext(ctx))
	if err != nil {
		return err
	}
	defer s.Close()
	el := concurrency.NewElection(s, prefix)
	if err := el.Campaign(ctx, id); err != nil {
		return err
	}
	l.leading.Store(true)
	defer l.leading.Store(false)
	select {
	case <-ctx.Done():
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = el.Resign(rctx)
		cancel()
	case <-s.Done():
	}
	return nil
}

// Held implements the coordinator's Lease.
func (l *Leader) Held(context.Context) bool { return l.leading.Load() }

// Close resigns and stops campaigning.
func (l *Leader) Close() {
	l.cancel()
	<-l.done
}

// File is a Source reading a JSON file, polled every few seconds.
type File struct {
	Path  string
	Every time.Duration
	Log   *slog.Logger
}

// Watch implements Source.
func (f File) Watch(ctx context.Context, apply func(Settings)) error {
	if f.Every <= 0 {
		f.Every = 2 * time.Second
	}
	var last []byte
	first := true
	for {
		raw, err := os.ReadFile(f.Path)
		if errors.Is(err, os.ErrNotExist) {
			raw, err = nil, nil
		}
		if err == nil && (first || !bytes.Equal(raw, last)) {
			if s, perr := Parse(raw); perr != nil {
				if f.Log != nil {
					f.Log.Error("config: refusing invalid settings", "file", f.Path, "err", perr)
				}
			} else {
				apply(s)
			}
			last, first = raw, false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(f.Every):
		}
	}
}
