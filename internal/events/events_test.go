package events_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sokovan-go/sokovan/internal/events"
)

func redisURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("SOKOVAN_TEST_REDIS")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis unreachable at %s (CI=true: Redis is required): %v", url, err)
		}
		t.Skipf("Redis unreachable at %s: %v", url, err)
	}
	return url
}

func stream(t *testing.T) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "sokovan-test:" + hex.EncodeToString(b)
	t.Cleanup(func() {
		opts, _ := redis.ParseURL(redisURL(t))
		c := redis.NewClient(opts)
		defer c.Close()
		c.Del(context.Background(), name)
	})
	return name
}

type collector struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *collector) handler(fail func(string) bool) events.Handler {
	return func(_ context.Context, p []byte) error {
		if fail != nil && fail(string(p)) {
			return errors.New("injected")
		}
		c.mu.Lock()
		c.seen[string(p)]++
		c.mu.Unlock()
		return nil
	}
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTwoConsumersShareTheStream(t *testing.T) {
	t.Parallel()
	url, name := redisURL(t), stream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	col := &collector{seen: map[string]int{}}
	var buses []*events.Redis
	for i := range 2 {
		b, err := events.OpenRedis(ctx, events.RedisConfig{URL: url, Stream: name, Consumer: fmt.Sprintf("m%d", i), Block: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		buses = append(buses, b)
		go b.Run(ctx, col.handler(nil))
	}
	for i := range 500 {
		if err := buses[i%2].Publish(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "500 messages", func() bool { return col.count() == 500 })
	waitUntil(t, "all acknowledged", func() bool { n, _ := buses[0].Pending(ctx); return n == 0 })
}

func TestDeadConsumersEntriesAreReclaimed(t *testing.T) {
	t.Parallel()
	url, name := redisURL(t), stream(t)
	ctx := context.Background()
	// The first consumer reads everything but its handler always fails, as
	// a manager that dies before committing: nothing is acknowledged.
	dying, err := events.OpenRedis(ctx, events.RedisConfig{URL: url, Stream: name, Consumer: "dying", Block: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer dying.Close()
	for i := range 20 {
		if err := dying.Publish(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	dctx, stop := context.WithCancel(ctx)
	go dying.Run(dctx, func(context.Context, []byte) error { return errors.New("crashed before commit") })
	waitUntil(t, "entries pending on the dying consumer", func() bool { n, _ := dying.Pending(ctx); return n == 20 })
	stop()

	col := &collector{seen: map[string]int{}}
	heir, err := events.OpenRedis(ctx, events.RedisConfig{URL: url, Stream: name, Consumer: "heir",
		ClaimIdle: 200 * time.Millisecond, Block: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer heir.Close()
	hctx, hstop := context.WithCancel(ctx)
	defer hstop()
	go heir.Run(hctx, col.handler(nil))
	waitUntil(t, "the heir to take over all 20", func() bool { return col.count() == 20 })
	waitUntil(t, "nothing pending", func() bool { n, _ := heir.Pending(ctx); return n == 0 })
	var got []string
	for p := range col.seen {
		got = append(got, p)
	}
	sort.Strings(got)
	if len(got) != 20 {
		t.Fatalf("reclaimed %v", got)
	}
}

func TestFailedHandlerIsRetried(t *testing.T) {
	t.Parallel()
	url, name := redisURL(t), stream(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := events.OpenRedis(ctx, events.RedisConfig{URL: url, Stream: name, Consumer: "m",
		ClaimIdle: 100 * time.Millisecond, Block: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var mu sync.Mutex
	failures := 0
	col := &collector{seen: map[string]int{}}
	go b.Run(ctx, col.handler(func(p string) bool {
		mu.Lock()
		defer mu.Unlock()
		if p == "flaky" && failures < 2 {
			failures++
			return true
		}
		return false
	}))
	if err := b.Publish(ctx, []byte("flaky")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the flaky message to succeed", func() bool { return col.count() == 1 })
	waitUntil(t, "nothing pending", func() bool { n, _ := b.Pending(ctx); return n == 0 })
}

func TestStreamLengthIsBounded(t *testing.T) {
	t.Parallel()
	url, name := redisURL(t), stream(t)
	ctx := context.Background()
	b, err := events.OpenRedis(ctx, events.RedisConfig{URL: url, Stream: name, Consumer: "m", MaxLen: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 2000 {
		if err := b.Publish(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// Approximate trimming keeps whole macro-nodes, so allow some slack.
	if n, err := b.Len(ctx); err != nil || n > 300 {
		t.Fatalf("stream holds %d entries (err %v), want about 100", n, err)
	}
}
