package codec

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sokovan-go/sokovan/internal/domain"
)

func TestSlotsRoundTrip(t *testing.T) {
	reg := domain.DefaultRegistry()
	for _, tc := range []struct {
		name string
		in   map[string]string
		want string
	}{
		{"empty", nil, `{}`},
		{"zeros are left out", map[string]string{"cpu": "0", "mem": "1g"}, `{"mem":"1073741824"}`},
		// cpu 1.5 is 1500 thousandths; the order is the registry's.
		{"base units", map[string]string{"cuda.shares": "0.25", "cpu": "1.5"}, `{"cpu":"1500","cuda.shares":"250"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := reg.ParseSlots(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := EncodeSlots(reg, v)
			if err != nil || got != tc.want {
				t.Fatalf("EncodeSlots = %s, %v; want %s", got, err, tc.want)
			}
			back, err := DecodeSlots(reg, got)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(v, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLimitsKeepZeroAndDropUnlimited(t *testing.T) {
	reg := domain.DefaultRegistry()
	v := domain.Unlimited(reg.Len())
	cpu, _ := reg.Lookup("cpu")
	v[cpu] = 0
	s, err := EncodeLimits(reg, v)
	if err != nil || s != `{"cpu":"0"}` {
		t.Fatalf("EncodeLimits = %s, %v", s, err)
	}
	back, err := DecodeLimits(reg, s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestDecodeSlotsRefusesWhatItCannotKeep(t *testing.T) {
	reg := domain.DefaultRegistry()
	for _, tc := range []struct{ name, in string }{
		{"not JSON", `cpu=1`},
		{"an array", `[1, 2]`},
		{"null", `null`},
		{"unknown slot", `{"warp": "1"}`},
		{"a decimal, not base units", `{"cpu": "1.5"}`},
		{"a word", `{"cpu": "lots"}`},
		{"a boolean", `{"cpu": true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v, err := DecodeSlots(reg, tc.in); err == nil {
				t.Errorf("DecodeSlots(%s) = %v, want an error", tc.in, v)
			}
		})
	}
	// Hand-edited bare integers and negative values still read, so a bad
	// balance shows up in the invariant check instead of hiding.
	v, err := DecodeSlots(reg, `{"cpu": 2000, "mem": "-1"}`)
	if err != nil {
		t.Fatal(err)
	}
	if v[0] != 2000 || v[1] != -1 {
		t.Errorf("got %v", v)
	}
	if _, err := EncodeSlots(reg, v); err == nil {
		t.Errorf("a negative quantity was written")
	}
	if _, err := DecodeSlots(reg, `{"warp": "1"}`); !errors.Is(err, domain.ErrUnknownSlot) {
		t.Errorf("unknown slot: %v, want ErrUnknownSlot", err)
	}
}

func TestMergeHistory(t *testing.T) {
	e := func(s domain.SessionID, msg string, sec int) domain.HistoryEntry {
		return domain.HistoryEntry{Subject: s, Cause: domain.HandlerScheduleNewSessions, Result: domain.ResultSkipped,
			From: domain.SessionPending, To: domain.SessionPending, Message: msg, At: base(sec)}
	}
	n := func(h domain.HistoryEntry, attempt int) domain.HistoryEntry { h.Attempt = attempt; return h }
	last := map[domain.SessionID]HistoryRow{
		"a": {RowID: 7, Entry: n(e("a", "full", 1), 2)},
		"b": {RowID: 9, Entry: n(e("b", "quota", 1), 1)},
	}
	updates, inserts := MergeHistory(last, []domain.HistoryEntry{
		e("a", "full", 5),  // merges into row 7: attempt 3
		e("b", "full", 5),  // differs from row 9: new
		e("b", "full", 6),  // merges into the new one
		e("c", "x", 6),     // first for c
		e("a", "other", 7), // new for a
		e("a", "full", 8),  // not the latest any more: new
	})
	wantUpdates := []HistoryRow{{RowID: 7, Entry: n(e("a", "full", 5), 3)}}
	wantInserts := []domain.HistoryEntry{n(e("b", "full", 6), 2), n(e("c", "x", 6), 1), n(e("a", "other", 7), 1), n(e("a", "full", 8), 1)}
	if diff := cmp.Diff(wantUpdates, updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantInserts, inserts); diff != "" {
		t.Errorf("inserts (-want +got):\n%s", diff)
	}
}

func base(sec int) time.Time {
	return time.Date(2025, 1, 16, 0, 0, sec, 0, time.UTC)
}

// TestDecodeFastAgreesWithJSON checks the hand-written reader against
// encoding/json's on what each engine gives back and on what it must
// leave to the general path.
func TestDecodeFastAgreesWithJSON(t *testing.T) {
	reg := domain.DefaultRegistry()
	tests := []struct {
		name, in string
	}{
		{"canonical", `{"cpu":"1500","mem":"4294967296"}`},
		{"jsonb spacing", `{"cpu": "1500", "mem": "4294967296", "cuda.shares": "8000"}`},
		{"empty", `{}`},
		{"empty spaced", ` { } `},
		{"bare integer", `{"cpu":1500}`},
		{"escaped name", `{"c\u0070u":"1"}`},
		{"repeated key", `{"cpu":"1","cpu":"2"}`},
		{"unknown slot", `{"tpu":"1"}`},
		{"not a number", `{"cpu":"1.5"}`},
		{"trailing garbage", `{"cpu":"1"}x`},
		{"array", `["cpu"]`},
		{"null", `null`},
		{"truncated", `{"cpu":"1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, limits := range []bool{false, true} {
				fresh := func() domain.Vec {
					if limits {
						return domain.Unlimited(reg.Len())
					}
					return reg.NewVec()
				}
				got, gotErr := decodeVec(reg, tc.in, fresh())
				want, wantErr := decodeVecJSON(reg, tc.in, fresh())
				if (gotErr == nil) != (wantErr == nil) {
					t.Fatalf("limits=%v: error %v, want %v", limits, gotErr, wantErr)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("limits=%v: (-want +got):\n%s", limits, diff)
				}
			}
		})
	}
}
