package config_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/sokovan-go/sokovan/internal/config"
)

func etcd(t *testing.T) string {
	t.Helper()
	ep := os.Getenv("SOKOVAN_TEST_ETCD")
	if ep == "" {
		ep = "127.0.0.1:2379"
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = cli.Get(ctx, "health")
		cancel()
		cli.Close()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("etcd unreachable at %s (CI=true: etcd is required): %v", ep, err)
		}
		t.Skipf("etcd unreachable at %s: %v", ep, err)
	}
	return ep
}

func TestParse(t *testing.T) {
	t.Parallel()
	good, err := config.Parse([]byte(`{"cycle_interval":"250ms","group_defaults":{"max_retries":5,"timeouts":{"pending":"1h"}}}`))
	if err != nil || time.Duration(good.CycleInterval) != 250*time.Millisecond || good.GroupDefaults.MaxRetries != 5 ||
		time.Duration(good.GroupDefaults.Timeouts["pending"]) != time.Hour {
		t.Fatalf("parsed %+v, %v", good, err)
	}
	for _, bad := range []struct{ in, field string }{
		{`{"cycle_intervall":"1s"}`, "cycle_intervall"},
		{`{"cycle_interval":5}`, "cycle_interval"},
		{`{"cycle_interval":"-1s"}`, "negative"},
		{`{"group_defaults":{"timeouts":{"runing":"1s"}}}`, "timeouts.runing"},
		{`{"group_defaults":{"max_retries":-1}}`, "max_retries"},
	} {
		if _, err := config.Parse([]byte(bad.in)); err == nil || !strings.Contains(err.Error(), bad.field) {
			t.Errorf("Parse(%s) = %v, want an error naming %s", bad.in, err, bad.field)
		}
	}
}

type latest struct {
	mu sync.Mutex
	s  []config.Settings
}

func (l *latest) apply(s config.Settings) { l.mu.Lock(); l.s = append(l.s, s); l.mu.Unlock() }
func (l *latest) last() (config.Settings, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.s) == 0 {
		return config.Settings{}, 0
	}
	return l.s[len(l.s)-1], len(l.s)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEtcdWatchAppliesChangesLive(t *testing.T) {
	t.Parallel()
	ep := etcd(t)
	key := fmt.Sprintf("/sokovan-test/%d", time.Now().UnixNano())
	src, err := config.OpenEtcd(ep, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := &latest{}
	go src.Watch(ctx, got.apply)
	waitFor(t, "the initial (empty) settings", func() bool { _, n := got.last(); return n == 1 })
	if err := src.Put(ctx, config.Settings{CycleInterval: config.Duration(300 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new cycle interval", func() bool {
		s, _ := got.last()
		return time.Duration(s.CycleInterval) == 300*time.Millisecond
	})
	// An invalid document is refused; the last good settings stay.
	cli, _ := clientv3.New(clientv3.Config{Endpoints: []string{ep}, Logger: zap.NewNop()})
	defer cli.Close()
	if _, err := cli.Put(ctx, key, `{"cycle_interval":"soon"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, key, `{"sweep_interval":"7s"}`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the next good settings", func() bool { s, _ := got.last(); return time.Duration(s.SweepInterval) == 7*time.Second })
	got.mu.Lock()
	for _, s := range got.s {
		if time.Duration(s.CycleInterval) != 0 && time.Duration(s.CycleInterval) != 300*time.Millisecond {
			t.Errorf("an invalid document was applied: %+v", s)
		}
	}
	got.mu.Unlock()
	cli.Delete(ctx, key)
}

func TestEtcdElectionHasOneLeaderAndPassesOn(t *testing.T) {
	t.Parallel()
	ep := etcd(t)
	prefix := fmt.Sprintf("/sokovan-test-leader/%d", time.Now().UnixNano())
	var srcs []*config.Etcd
	var leaders []*config.Leader
	for i := range 2 {
		src, err := config.OpenEtcd(ep, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		srcs = append(srcs, src)
		leaders = append(leaders, src.Elect(prefix, fmt.Sprintf("m%d", i), 2))
	}
	ctx := context.Background()
	waitFor(t, "a leader", func() bool { return leaders[0].Held(ctx) || leaders[1].Held(ctx) })
	first := 0
	if leaders[1].Held(ctx) {
		first = 1
	}
	for range 20 {
		if leaders[0].Held(ctx) && leaders[1].Held(ctx) {
			t.Fatal("two leaders at once")
		}
		time.Sleep(10 * time.Millisecond)
	}
	leaders[first].Close()
	waitFor(t, "the other to lead", func() bool { return leaders[1-first].Held(ctx) })
	leaders[1-first].Close()
}

func TestFileSourcePicksUpEdits(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sokovan.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := &latest{}
	go config.File{Path: path, Every: 10 * time.Millisecond}.Watch(ctx, got.apply)
	waitFor(t, "defaults without a file", func() bool { _, n := got.last(); return n == 1 })
	if err := os.WriteFile(path, []byte(`{"lost_grace":"45s"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the edit", func() bool { s, _ := got.last(); return time.Duration(s.LostGrace) == 45*time.Second })
}
