package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Handler applies one message. An error leaves the message pending, so it
// is delivered again (to this or another consumer) later.
type Handler func(ctx context.Context, payload []byte) error

// RedisConfig describes a stream and this consumer's place in its group.
type RedisConfig struct {
	// URL is redis://host:port/db.
	URL string
	// Stream and Group default to "sokovan:agent-events" and "managers".
	Stream string
	Group  string
	// Consumer names this manager in the group; it must be unique and
	// stable for as long as it lives.
	Consumer string
	// MaxLen bounds the stream (approximately, as XADD ~ does); default
	// 100,000 entries.
	MaxLen int64
	// ClaimIdle is how long an entry may stay pending before another
	// consumer takes it over; default 30s.
	ClaimIdle time.Duration
	// Block is how long one read waits for new entries; default 1s.
	Block time.Duration
	Log   *slog.Logger
}

// Redis is a Streams-backed bus.
type Redis struct {
	rdb *redis.Client
	cfg RedisConfig
}

// payloadField is the one field each entry carries.
const payloadField = "p"

// OpenRedis connects and makes sure the consumer group exists.
func OpenRedis(ctx context.Context, cfg RedisConfig) (*Redis, error) {
	opts, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	if cfg.Stream == "" {
		cfg.Stream = "sokovan:agent-events"
	}
	if cfg.Group == "" {
		cfg.Group = "managers"
	}
	if cfg.Consumer == "" {
		return nil, errors.New("events: a consumer name is required")
	}
	if cfg.MaxLen <= 0 {
		cfg.MaxLen = 100_000
	}
	if cfg.ClaimIdle <= 0 {
		cfg.ClaimIdle = 30 * time.Second
	}
	if cfg.Block <= 0 {
		cfg.Block = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	r := &Redis{rdb: redis.NewClient(opts), cfg: cfg}
	// "$" would skip entries published before the group existed; "0" makes
	// the first manager take everything already in the stream.
	err = r.rdb.XGroupCreateMkStream(ctx, cfg.Stream, cfg.Group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		r.rdb.Close()
		return nil, fmt.Errorf("events: create group: %w", err)
	}
	return r, nil
}

// Close disconnects.
func (r *Redis) Close() error { return r.rdb.Close() }

// Publish appends a message; the stream keeps about MaxLen entries.
func (r *Redis) Publish(ctx context.Context, payload []byte) error {
	err := r.rdb.XAdd(ctx, &redis.XAddArgs{Stream: r.cfg.Stream, MaxLen: r.cfg.MaxLen, Approx: true,
		Values: map[string]any{payloadField: payload}}).Err()
	if err != nil {
		return fmt.Errorf("events: publish: %w", err)
	}
	return nil
}

// Run consumes until ctx ends: new entries as they come, and every
// ClaimIdle/2 the entries other consumers left pending too long.
func (r *Redis) Run(ctx context.Context, h Handler) error {
	claimEvery := time.NewTicker(r.cfg.ClaimIdle / 2)
	defer claimEvery.Stop()
	for {
		if ctx.Err() != nil {
			return nil
		}
		select {
		case <-claimEvery.C:
			if err := r.reclaim(ctx, h); err != nil && ctx.Err() == nil {
				r.cfg.Log.Warn("events: reclaim", "err", err)
			}
		default:
		}
		streams, err := r.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: r.cfg.Group, Consumer: r.cfg.Consumer,
			Streams: []string{r.cfg.Stream, ">"}, Count: 100, Block: r.cfg.Block}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.cfg.Log.Warn("events: read", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		for _, s := range streams {
			r.handle(ctx, h, s.Messages)
		}
	}
}

// reclaim takes over entries idle past ClaimIdle, from any consumer.
func (r *Redis) reclaim(ctx context.Context, h Handler) error {
	start := "0-0"
	for {
		msgs, next, err := r.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: r.cfg.Stream, Group: r.cfg.Group,
			Consumer: r.cfg.Consumer, MinIdle: r.cfg.ClaimIdle, Start: start, Count: 100}).Result()
		if err != nil {
			return err
		}
		r.handle(ctx, h, msgs)
		if next == "0-0" || next == "" || len(msgs) == 0 {
			return nil
		}
		start = next
	}
}

// handle applies messages and acknowledges each only after its handler
// succeeded; a failed one stays pending for a later reclaim.
func (r *Redis) handle(ctx context.Context, h Handler, msgs []redis.XMessage) {
	for _, m := range msgs {
		raw, _ := m.Values[payloadField].(string)
		if err := h(ctx, []byte(raw)); err != nil {
			r.cfg.Log.Warn("events: handler failed; left pending", "id", m.ID, "err", err)
			continue
		}
		if err := r.rdb.XAck(ctx, r.cfg.Stream, r.cfg.Group, m.ID).Err(); err != nil {
			r.cfg.Log.Warn("events: ack", "id", m.ID, "err", err)
		}
	}
}

// Pending is how many entries the group has delivered and not had
// acknowledged, for tests and metrics.
func (r *Redis) Pending(ctx context.Context) (int64, error) {
	p, err := r.rdb.XPending(ctx, r.cfg.Stream, r.cfg.Group).Result()
	if err != nil {
		return 0, err
	}
	return p.Count, nil
}

// Len is the stream's length.
func (r *Redis) Len(ctx context.Context) (int64, error) {
	return r.rdb.XLen(ctx, r.cfg.Stream).Result()
}
