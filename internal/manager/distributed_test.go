package manager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sokovan-go/sokovan/internal/agent"
	"github.com/sokovan-go/sokovan/internal/agent/runtime/sim"
	"github.com/sokovan-go/sokovan/internal/config"
	"github.com/sokovan-go/sokovan/internal/coordinator"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/manager"
	"github.com/sokovan-go/sokovan/internal/store/pgtest"
)

func redisURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("SOKOVAN_TEST_REDIS")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, _ := redis.ParseURL(url)
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redis unreachable (CI=true: required): %v", err)
		}
		t.Skipf("Redis unreachable: %v", err)
	}
	return url
}

// TestTwoManagersShareEvents runs two managers on one PostgreSQL database
// with Redis Streams between them. Agents talk to the first only; its
// events reach the stream, and sessions created through either manager
// reach RUNNING and then TERMINATED: whichever manager consumes an event,
// the guarded store keeps one truth.
func TestTwoManagersShareEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two managers")
	}
	dsn, rurl := pgtest.NewDatabase(t), redisURL(t)
	streamName := fmt.Sprintf("sokovan-test:%d", time.Now().UnixNano())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ms []*manager.Manager
	for range 2 {
		m, err := manager.Open(ctx, manager.Config{DB: dsn, Listen: "127.0.0.1:0", AgentToken: "tok", Events: rurl, EventsStream: streamName,
			Coordinator: coordinator.Config{ShortInterval: 50 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	for i := range 2 {
		a, err := agent.New(agent.Config{ID: domain.AgentID(fmt.Sprintf("sim-%d", i)), ResourceGroup: "default",
			Manager: ms[0].URL(), Token: "tok", Listen: "127.0.0.1:0", Capacity: map[string]string{"cpu": "32", "mem": "32g"},
			HeartbeatInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := sim.New(sim.Config{Sink: a.Sink, Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		go a.Run(ctx, rt)
	}
	d := &devRun{t: t}
	var ids []domain.SessionID
	for i := range 20 {
		d.info.Parts = ms[i%2].Parts
		ids = append(ids, d.submit(fmt.Sprintf("s-%02d", i), "exit:0", 1, domain.SingleNode))
	}
	want := map[domain.SessionID]domain.SessionStatus{}
	for _, id := range ids {
		want[id] = domain.SessionTerminated
	}
	d.info.Parts = ms[1].Parts
	d.waitFor(want)
	// The events crossed the stream and were all acknowledged.
	opts, _ := redis.ParseURL(rurl)
	rc := redis.NewClient(opts)
	defer rc.Close()
	defer rc.Del(context.Background(), streamName)
	if n, err := rc.XLen(ctx, streamName).Result(); err != nil || n == 0 {
		t.Fatalf("stream holds %d entries (%v); events did not go through Redis", n, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := rc.XPending(ctx, streamName, "managers").Result()
		if err == nil && p.Count == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("entries left unacknowledged: %+v (%v)", p, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range ids {
		s, err := ms[1].Store.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Session.Outcome != domain.OutcomeSuccess {
			t.Fatalf("%s ended %v (%q)", id, s.Session.Outcome, s.Session.StatusReason)
		}
	}
}

func etcdEndpoint(t *testing.T) string {
	t.Helper()
	ep := os.Getenv("SOKOVAN_TEST_ETCD")
	if ep == "" {
		ep = "127.0.0.1:2379"
	}
	src, err := config.OpenEtcd(ep, "/sokovan-probe", nil)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = src.Put(ctx, config.Settings{})
		cancel()
		src.Close()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("etcd unreachable at %s (CI=true: required): %v", ep, err)
		}
		t.Skipf("etcd unreachable at %s: %v", ep, err)
	}
	return ep
}

// TestEtcdSettingsApplyLive starts a manager configured from etcd and
// changes the shared settings under it.
func TestEtcdSettingsApplyLive(t *testing.T) {
	t.Parallel()
	ep := etcdEndpoint(t)
	key := fmt.Sprintf("/sokovan-test-config/%d", time.Now().UnixNano())
	ctx, cancel := context.WithCancel(context.Background())
	m, err := manager.Open(ctx, manager.Config{DB: filepath.Join(t.TempDir(), "s.db"), Listen: "127.0.0.1:0",
		AgentToken: "tok", Config: "etcd://" + ep + key})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	src, err := config.OpenEtcd(ep, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.Put(ctx, config.Settings{CycleInterval: config.Duration(123 * time.Millisecond),
		HeartbeatTimeout: config.Duration(7 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := m.Coordinator.Config()
		if c.ShortInterval == 123*time.Millisecond && c.HeartbeatTimeout == 7*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("settings not applied: %+v", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
