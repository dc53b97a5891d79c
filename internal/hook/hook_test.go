package hook_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/hook"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestOnEnd(t *testing.T) {
	t.Parallel()
	r := hook.Standard()
	for _, tc := range []struct {
		name string
		run  hook.Running
		at   time.Duration // after t0, when the session started
		want string
	}{
		{"batch within its limit", hook.Running{Type: domain.TypeBatch, Started: t0, TimeLimit: time.Hour}, 59 * time.Minute, ""},
		{"batch at its limit", hook.Running{Type: domain.TypeBatch, Started: t0, TimeLimit: time.Hour}, time.Hour, hook.ReasonTimeLimit},
		{"batch without a limit", hook.Running{Type: domain.TypeBatch, Started: t0}, 1000 * time.Hour, ""},
		// Idleness does not apply to batch, however long.
		{"batch idle", hook.Running{Type: domain.TypeBatch, Started: t0, IdleTimeout: time.Minute}, time.Hour, ""},
		{"interactive at its limit", hook.Running{Type: domain.TypeInteractive, Started: t0, TimeLimit: time.Hour,
			LastActivity: t0.Add(time.Hour)}, time.Hour, hook.ReasonTimeLimit},
		// Never used: idle since it started, 10 min ≥ 10 min.
		{"interactive never used", hook.Running{Type: domain.TypeInteractive, Started: t0, IdleTimeout: 10 * time.Minute},
			10 * time.Minute, hook.ReasonIdleTimeout},
		// Used at +5 min: idle 9 min < 10 min at +14 min.
		{"interactive used recently", hook.Running{Type: domain.TypeInteractive, Started: t0, IdleTimeout: 10 * time.Minute,
			LastActivity: t0.Add(5 * time.Minute)}, 14 * time.Minute, ""},
		{"interactive used then idle", hook.Running{Type: domain.TypeInteractive, Started: t0, IdleTimeout: 10 * time.Minute,
			LastActivity: t0.Add(5 * time.Minute)}, 15 * time.Minute, hook.ReasonIdleTimeout},
		{"interactive, idle timeout off", hook.Running{Type: domain.TypeInteractive, Started: t0}, 1000 * time.Hour, ""},
		{"inference never ends", hook.Running{Type: domain.TypeInference, Started: t0, TimeLimit: time.Minute,
			IdleTimeout: time.Minute}, 1000 * time.Hour, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := r.For(tc.run.Type).OnEnd(tc.run, t0.Add(tc.at)); got != tc.want {
				t.Errorf("OnEnd at +%s = %q, want %q", tc.at, got, tc.want)
			}
		})
	}
}

func TestOnSchedule(t *testing.T) {
	t.Parallel()
	r := hook.Standard()
	group := domain.ResourceGroup{Name: "g", DefaultTimeLimit: time.Hour, MaxTimeLimit: 4 * time.Hour}
	for _, tc := range []struct {
		name  string
		typ   domain.SessionType
		group domain.ResourceGroup
		asked time.Duration
		want  time.Duration
		field string // the refused field, "" when accepted
	}{
		{"default filled in", domain.TypeBatch, group, 0, time.Hour, ""},
		{"own limit kept", domain.TypeInteractive, group, 2 * time.Hour, 2 * time.Hour, ""},
		{"at the max", domain.TypeBatch, group, 4 * time.Hour, 4 * time.Hour, ""},
		{"above the max", domain.TypeBatch, group, 4*time.Hour + time.Second, 0, "time_limit"},
		{"negative", domain.TypeBatch, group, -time.Second, 0, "time_limit"},
		{"max without default", domain.TypeBatch, domain.ResourceGroup{MaxTimeLimit: 3 * time.Hour}, 0, 3 * time.Hour, ""},
		{"no limits at all", domain.TypeBatch, domain.ResourceGroup{}, 0, 0, ""},
		{"inference takes no default", domain.TypeInference, group, 0, 0, ""},
		{"inference refuses a limit", domain.TypeInference, group, time.Hour, 0, "time_limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := domain.Session{Type: tc.typ, TimeLimit: tc.asked}
			err := r.For(tc.typ).OnSchedule(&s, tc.group)
			if tc.field != "" {
				var fe *hook.FieldError
				if !errors.As(err, &fe) || fe.Field != tc.field {
					t.Fatalf("OnSchedule error %v, want one naming %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatalf("OnSchedule: %v", err)
			}
			if s.TimeLimit != tc.want {
				t.Errorf("time limit %s, want %s", s.TimeLimit, tc.want)
			}
		})
	}
}

func TestOnStart(t *testing.T) {
	t.Parallel()
	r := hook.Standard()
	s := domain.Session{TimeLimit: 90 * time.Second}
	got := map[domain.SessionType]hook.Start{}
	for _, typ := range domain.SessionTypes() {
		got[typ] = r.For(typ).OnStart(s)
	}
	want := map[domain.SessionType]hook.Start{
		domain.TypeBatch: {TimeLimit: 90 * time.Second}, domain.TypeInteractive: {TimeLimit: 90 * time.Second},
		domain.TypeInference: {Serves: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OnStart (-want +got):\n%s", diff)
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	if _, err := hook.New(map[domain.SessionType]hook.Hook{domain.TypeBatch: hook.Batch{}}); err == nil {
		t.Error("New accepted a registry missing types")
	}
	if diff := cmp.Diff([]domain.SessionType{domain.TypeInteractive}, hook.Standard().IdleTypes()); diff != "" {
		t.Errorf("idle types (-want +got):\n%s", diff)
	}
}
