package domain

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Slot ids in DefaultRegistry order; spelled out so a reordering of
// DefaultSlotTypes shows up here rather than as confusing vector diffs.
const (
	idCPU SlotID = iota
	idMem
	idCUDADevice
	idCUDAShares
)

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
	pib = 1 << 50
)

func TestParseQuantity(t *testing.T) {
	tests := []struct {
		name string
		kind Kind
		in   string
		want Quantity
		// wantErr, when set, is a fragment the error must contain, so a row
		// fails if the input is rejected for a different reason than the
		// one it exercises.
		wantErr string
	}{
		{name: "count whole", kind: KindCount, in: "2", want: 2000},           // 2 * 1000
		{name: "count half", kind: KindCount, in: "0.5", want: 500},           // 0.5 * 1000
		{name: "count two decimals", kind: KindCount, in: "1.25", want: 1250}, // 1.25 * 1000
		{name: "count smallest unit", kind: KindCount, in: "0.001", want: 1},  // 0.001 * 1000
		{name: "count zero", kind: KindCount, in: "0", want: 0},
		{name: "count trailing zeros beyond three decimals", kind: KindCount, in: "0.5000", want: 500}, // 5000 * 1000 / 10^4
		{name: "count leading dot", kind: KindCount, in: ".5", want: 500},
		{name: "count plus sign", kind: KindCount, in: "+2", want: 2000},
		{name: "count surrounding spaces", kind: KindCount, in: " 2 ", want: 2000},
		// (2^63-1) thousandths is the largest count; FormatQuantity writes
		// MaxQuantity this way, so it must parse.
		{name: "count max", kind: KindCount, in: "9223372036854775.807", want: MaxQuantity},
		// The same value with a redundant ".0": 9e15 * 1000 = 9e18 < 2^63.
		{name: "count large with zero fraction", kind: KindCount, in: "9000000000000000.0", want: 9_000_000_000_000_000_000},
		{name: "shares quarter", kind: KindShares, in: "0.25", want: 250}, // 0.25 * 1000

		{name: "bytes plain", kind: KindBytes, in: "1024", want: 1024},
		{name: "bytes gibibytes", kind: KindBytes, in: "4g", want: 4294967296},                     // 4 * 2^30
		{name: "bytes mebibytes", kind: KindBytes, in: "512m", want: 536870912},                    // 512 * 2^20
		{name: "bytes fractional upper suffix", kind: KindBytes, in: "1.5G", want: 1610612736},     // 1.5 * 2^30
		{name: "bytes half kibibyte", kind: KindBytes, in: "0.5k", want: 512},                      // 0.5 * 2^10
		{name: "bytes upper k", kind: KindBytes, in: "1K", want: 1024},                             // 1 * 2^10
		{name: "bytes largest pebibytes", kind: KindBytes, in: "8191p", want: 9222246136947933184}, // 8191 * 2^50 = 2^63 - 2^50
		{name: "bytes max", kind: KindBytes, in: "9223372036854775807", want: MaxQuantity},         // 2^63 - 1
		{name: "bytes Gi", kind: KindBytes, in: "4Gi", want: 4294967296},                           // 4 * 2^30
		{name: "bytes GiB", kind: KindBytes, in: "2GiB", want: 2147483648},                         // 2 * 2^30
		{name: "bytes lower mi", kind: KindBytes, in: "512mi", want: 536870912},                    // 512 * 2^20
		{name: "bytes fractional Ti", kind: KindBytes, in: "0.5Ti", want: 549755813888},            // 0.5 * 2^40
		{name: "bytes lone i", kind: KindBytes, in: "4i", wantErr: "unknown unit suffix"},
		{name: "bytes iB without unit", kind: KindBytes, in: "4iB", wantErr: "unknown unit suffix"},
		{name: "bytes GB is not a unit here", kind: KindBytes, in: "4GB", wantErr: "Gi"},
		{name: "count Gi", kind: KindCount, in: "1Gi", wantErr: "only for byte slots"},

		{name: "bytes half byte", kind: KindBytes, in: "0.5", wantErr: "whole number of bytes"},
		{name: "bytes fraction of a byte after suffix", kind: KindBytes, in: "0.0001k", wantErr: "whole number of bytes"}, // 0.0001 * 1024 = 0.1024
		{name: "count more than three decimals", kind: KindCount, in: "0.0005", wantErr: "decimal places"},                // 0.0005 * 1000 = 0.5 thousandths
		{name: "count too many decimals for uint64", kind: KindCount, in: "1.0000000000000000000", wantErr: "decimal places"},
		{name: "negative", kind: KindCount, in: "-1", wantErr: "negative"},
		{name: "negative zero", kind: KindBytes, in: "-0", wantErr: "negative"},
		{name: "NaN", kind: KindCount, in: "NaN", wantErr: "not a decimal number"},
		{name: "Inf", kind: KindCount, in: "Inf", wantErr: "not a decimal number"},
		{name: "plus Inf on bytes", kind: KindBytes, in: "+Inf", wantErr: "not a decimal number"},
		{name: "empty", kind: KindCount, in: "", wantErr: "empty"},
		{name: "blank", kind: KindBytes, in: "   ", wantErr: "empty"},
		{name: "exponent", kind: KindCount, in: "1e3", wantErr: "not a decimal number"},
		{name: "bare plus", kind: KindCount, in: "+", wantErr: "not a decimal number"},
		{name: "bare dot", kind: KindCount, in: ".", wantErr: "not a decimal number"},
		{name: "trailing dot", kind: KindBytes, in: "1.k", wantErr: "not a decimal number"},
		{name: "two dots", kind: KindCount, in: "1.2.3", wantErr: "not a decimal number"},
		{name: "suffix only", kind: KindBytes, in: "g", wantErr: "not a decimal number"},
		{name: "suffix on count", kind: KindCount, in: "4g", wantErr: "only for byte slots"},
		{name: "suffix on shares", kind: KindShares, in: "1k", wantErr: "only for byte slots"},
		{name: "unknown suffix", kind: KindBytes, in: "2x", wantErr: "unknown unit suffix"},
		{name: "overflow digits bytes", kind: KindBytes, in: "99999999999999999999", wantErr: "overflows"}, // > 2^64
		{name: "overflow digits count", kind: KindCount, in: "99999999999999999999", wantErr: "overflows"},
		{name: "overflow suffix", kind: KindBytes, in: "9000000p", wantErr: "overflows"},                          // 9e6 * 2^50 > 2^64
		{name: "overflow just past max pebibytes", kind: KindBytes, in: "8192p", wantErr: "overflows"},            // 8192 * 2^50 = 2^63
		{name: "overflow just past max bytes", kind: KindBytes, in: "9223372036854775808", wantErr: "overflows"},  // 2^63
		{name: "overflow count scale", kind: KindCount, in: "9223372036854776", wantErr: "overflows"},             // * 1000 > 2^63 - 1
		{name: "overflow just past max count", kind: KindCount, in: "9223372036854775.808", wantErr: "overflows"}, // 2^63 thousandths
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseQuantity(tt.kind, tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseQuantity(%v, %q) = %d, want error containing %q", tt.kind, tt.in, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ParseQuantity(%v, %q) error = %q, want it to contain %q", tt.kind, tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseQuantity(%v, %q) error: %v", tt.kind, tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseQuantity(%v, %q) = %d, want %d", tt.kind, tt.in, got, tt.want)
			}
		})
	}
}

func TestKindStringParse(t *testing.T) {
	for _, k := range []Kind{KindCount, KindBytes, KindShares} {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v, want %v", k.String(), got, err, k)
		}
	}
	if _, err := ParseKind("Count"); err == nil {
		t.Error(`ParseKind("Count") succeeded, want error: names are lower case`)
	}
}

func TestNewRegistryRejects(t *testing.T) {
	tests := []struct {
		name  string
		types []SlotType
		// mention is what the error must name so an operator can find the
		// offending entry in the configuration.
		mention string
	}{
		{name: "duplicate", types: []SlotType{{"cpu", KindCount}, {"cpu", KindBytes}}, mention: "cpu"},
		{name: "upper case", types: []SlotType{{"GPU", KindCount}}, mention: "GPU"},
		{name: "space", types: []SlotType{{"my gpu", KindCount}}, mention: "my gpu"},
		{name: "empty name", types: []SlotType{{"", KindCount}}, mention: `""`},
		{name: "zero kind", types: []SlotType{{"tpu", 0}}, mention: "tpu"},
		{name: "kind out of range", types: []SlotType{{"tpu", KindShares + 1}}, mention: "tpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRegistry(tt.types...)
			if err == nil {
				t.Fatalf("NewRegistry(%v) = %v, want error", tt.types, r.Types())
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("NewRegistry(%v) error = %q, want it to name %s", tt.types, err, tt.mention)
			}
		})
	}
}

func TestRegistryParse(t *testing.T) {
	r := DefaultRegistry()
	tests := []struct {
		name    string
		slot    string
		in      string
		wantID  SlotID
		wantQ   Quantity
		wantErr bool
		// unknown says the error must wrap ErrUnknownSlot; errors about the
		// value of a known slot must not, or callers would report a bad
		// value as a missing slot type.
		unknown bool
	}{
		{name: "cpu", slot: "cpu", in: "2", wantID: idCPU, wantQ: 2000},                    // 2 * 1000
		{name: "mem", slot: "mem", in: "4g", wantID: idMem, wantQ: 4 * gib},                // 4 * 2^30
		{name: "device", slot: "cuda.device", in: "1", wantID: idCUDADevice, wantQ: 1000},  // 1 * 1000
		{name: "shares", slot: "cuda.shares", in: "0.5", wantID: idCUDAShares, wantQ: 500}, // 0.5 * 1000
		{name: "mem not whole bytes", slot: "mem", in: "0.5", wantErr: true},
		{name: "cpu too many decimals", slot: "cpu", in: "0.0005", wantErr: true},
		{name: "suffix on count slot", slot: "cuda.device", in: "1k", wantErr: true},
		{name: "negative", slot: "cuda.shares", in: "-1", wantErr: true},
		{name: "empty value", slot: "cpu", in: "", wantErr: true},
		{name: "unknown slot", slot: "tpu", in: "1", wantErr: true, unknown: true},
		{name: "unknown slot differing in case", slot: "CPU", in: "1", wantErr: true, unknown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, q, err := r.Parse(tt.slot, tt.in)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Parse(%q, %q) error: %v", tt.slot, tt.in, err)
				}
				if id != tt.wantID || q != tt.wantQ {
					t.Errorf("Parse(%q, %q) = %d, %d, want %d, %d", tt.slot, tt.in, id, q, tt.wantID, tt.wantQ)
				}
				if name := r.Type(id).Name; name != tt.slot {
					t.Errorf("Parse(%q, %q) returned id %d, which is slot %q", tt.slot, tt.in, id, name)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse(%q, %q) = %d, %d, want error", tt.slot, tt.in, id, q)
			}
			if !strings.Contains(err.Error(), tt.slot) {
				t.Errorf("Parse(%q, %q) error = %q, want it to name the slot", tt.slot, tt.in, err)
			}
			if got := errors.Is(err, ErrUnknownSlot); got != tt.unknown {
				t.Errorf("Parse(%q, %q): errors.Is(err, ErrUnknownSlot) = %v, want %v (err %q)", tt.slot, tt.in, got, tt.unknown, err)
			}
		})
	}
}

func TestFormatQuantity(t *testing.T) {
	tests := []struct {
		name string
		kind Kind
		q    Quantity
		want string
	}{
		{name: "count zero", kind: KindCount, q: 0, want: "0"},
		{name: "count whole", kind: KindCount, q: 2000, want: "2"},         // 2000 / 1000
		{name: "count half", kind: KindCount, q: 500, want: "0.5"},         // 500 / 1000
		{name: "count trims zeros", kind: KindCount, q: 1100, want: "1.1"}, // 1100 / 1000 = 1.100
		{name: "count smallest", kind: KindCount, q: 1, want: "0.001"},     // 1 / 1000
		{name: "count max", kind: KindCount, q: MaxQuantity, want: "9223372036854775.807"},
		{name: "shares", kind: KindShares, q: 250, want: "0.25"}, // 250 / 1000
		{name: "bytes zero", kind: KindBytes, q: 0, want: "0"},
		{name: "bytes not a kibibyte multiple", kind: KindBytes, q: 1023, want: "1023"},
		{name: "bytes one and a half kibibytes", kind: KindBytes, q: 1536, want: "1536"}, // 1.5 * 2^10 has no whole suffix
		{name: "bytes kibibyte", kind: KindBytes, q: kib, want: "1k"},
		{name: "bytes gibibytes", kind: KindBytes, q: 4 * gib, want: "4g"},
		{name: "bytes one and a half gibibytes", kind: KindBytes, q: 1610612736, want: "1536m"}, // 1.5 * 2^30 = 1536 * 2^20
		{name: "bytes pebibyte", kind: KindBytes, q: pib, want: "1p"},
		{name: "bytes exabyte stays in pebibytes", kind: KindBytes, q: 1024 * pib, want: "1024p"}, // 2^60; no larger suffix
		{name: "bytes max", kind: KindBytes, q: MaxQuantity, want: "9223372036854775807"},         // odd, so no suffix
		// Negative values are accounting errors; they are written so a log
		// shows them, with the most negative value not wrapping.
		{name: "count negative", kind: KindCount, q: -500, want: "-0.5"},
		{name: "bytes most negative", kind: KindBytes, q: math.MinInt64, want: "-8192p"}, // -2^63 = -8192 * 2^50
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FormatQuantity(tt.kind, tt.q)
			if got != tt.want {
				t.Errorf("FormatQuantity(%v, %d) = %q, want %q", tt.kind, tt.q, got, tt.want)
			}
			if tt.q < 0 {
				return // ParseQuantity rejects negatives by design.
			}
			back, err := ParseQuantity(tt.kind, got)
			if err != nil || back != tt.q {
				t.Errorf("ParseQuantity(%v, %q) = %d, %v, want %d: FormatQuantity output must read back", tt.kind, got, back, err, tt.q)
			}
		})
	}
}

func TestParseSlots(t *testing.T) {
	r := DefaultRegistry()
	tests := []struct {
		name    string
		in      map[string]string
		want    Vec
		wantErr string // slot name the error must mention
		unknown bool
	}{
		{
			name: "missing keys are zero",
			in:   map[string]string{"cpu": "2", "mem": "4g"},
			want: Vec{2000, 4 * gib, 0, 0}, // cpu 2 * 1000, mem 4 * 2^30
		},
		{
			name: "all slots",
			in:   map[string]string{"cpu": "0.5", "mem": "512m", "cuda.device": "2", "cuda.shares": "0.25"},
			want: Vec{500, 512 * mib, 2000, 250},
		},
		{name: "empty map", in: map[string]string{}, want: Vec{0, 0, 0, 0}},
		{name: "nil map", in: nil, want: Vec{0, 0, 0, 0}},
		{name: "explicit zero", in: map[string]string{"mem": "0"}, want: Vec{0, 0, 0, 0}},
		{
			name:    "unknown slot",
			in:      map[string]string{"cpu": "2", "gpu": "1"},
			wantErr: "gpu",
			unknown: true,
		},
		{name: "bad value", in: map[string]string{"cpu": "1", "mem": "0.5"}, wantErr: "mem"},
		// Two bad names: the error must always be about the first in name
		// order, or retried requests would report different problems.
		{
			name:    "first error in name order",
			in:      map[string]string{"zz": "1", "aa": "1", "mm": "1"},
			wantErr: "aa",
			unknown: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.ParseSlots(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseSlots(%v) = %v, want error naming %q", tt.in, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ParseSlots(%v) error = %q, want it to name %q", tt.in, err, tt.wantErr)
				}
				if errors.Is(err, ErrUnknownSlot) != tt.unknown {
					t.Errorf("ParseSlots(%v): errors.Is(err, ErrUnknownSlot) = %v, want %v", tt.in, !tt.unknown, tt.unknown)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSlots(%v) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseSlots(%v) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestFormatSlots(t *testing.T) {
	r := DefaultRegistry()
	tests := []struct {
		name string
		in   Vec
		want map[string]string
	}{
		{
			name: "zeros left out",
			in:   Vec{2000, 0, 1000, 250},
			want: map[string]string{"cpu": "2", "cuda.device": "1", "cuda.shares": "0.25"},
		},
		{name: "zero vector", in: r.NewVec(), want: map[string]string{}},
		{name: "short vector", in: Vec{0, 4 * gib}, want: map[string]string{"mem": "4g"}},
		{
			// Policies store "no limit" as MaxQuantity in every slot, so it
			// has to be writable in every kind.
			name: "unlimited",
			in:   Unlimited(4),
			want: map[string]string{
				"cpu":         "9223372036854775.807",
				"mem":         "9223372036854775807",
				"cuda.device": "9223372036854775.807",
				"cuda.shares": "9223372036854775.807",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.FormatSlots(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FormatSlots(%v) mismatch (-want +got):\n%s", tt.in, diff)
			}
			// The store writes FormatSlots and reads ParseSlots; the pair
			// must be lossless.
			back, err := r.ParseSlots(got)
			if err != nil {
				t.Fatalf("ParseSlots(FormatSlots(%v)) error: %v", tt.in, err)
			}
			want := r.NewVec()
			copy(want, tt.in)
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("ParseSlots(FormatSlots(%v)) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestAddSat(t *testing.T) {
	tests := []struct {
		name string
		a, b Quantity
		want Quantity
	}{
		{name: "small", a: 1, b: 2, want: 3},
		{name: "zero", a: 7, b: 0, want: 7},
		{name: "negative addend", a: -5, b: 3, want: -2},
		{name: "max plus one saturates", a: MaxQuantity, b: 1, want: MaxQuantity}, // 2^63 wraps to -2^63 unguarded
		{name: "max plus max saturates", a: MaxQuantity, b: MaxQuantity, want: MaxQuantity},
		{name: "near max", a: MaxQuantity - 10, b: 10, want: MaxQuantity},             // exactly 2^63-1
		{name: "near max plus eleven", a: MaxQuantity - 10, b: 11, want: MaxQuantity}, // 2^63 clamps
		{name: "max minus one", a: MaxQuantity, b: -1, want: MaxQuantity - 1},
		{name: "min minus one saturates", a: math.MinInt64, b: -1, want: math.MinInt64}, // -2^63-1 clamps
		{name: "zero plus min", a: 0, b: math.MinInt64, want: math.MinInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AddSat(tt.a, tt.b); got != tt.want {
				t.Errorf("AddSat(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := AddSat(tt.b, tt.a); got != tt.want {
				t.Errorf("AddSat(%d, %d) = %d, want %d (addition commutes)", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

func TestSubSat(t *testing.T) {
	tests := []struct {
		name string
		a, b Quantity
		want Quantity
	}{
		{name: "small", a: 5, b: 3, want: 2},
		// Going below zero is kept visible rather than clamped to zero.
		{name: "below zero", a: 3, b: 5, want: -2},
		{name: "min minus one saturates", a: math.MinInt64, b: 1, want: math.MinInt64},
		{name: "max minus negative saturates", a: MaxQuantity, b: -1, want: MaxQuantity},
		{name: "minus max", a: -5, b: MaxQuantity, want: math.MinInt64},           // -5 - (2^63-1) < -2^63
		{name: "zero minus min", a: 0, b: math.MinInt64, want: MaxQuantity},       // 0 + 2^63 clamps to 2^63-1
		{name: "minus one minus min", a: -1, b: math.MinInt64, want: MaxQuantity}, // -1 + 2^63 = 2^63-1 exactly
		{name: "min minus min", a: math.MinInt64, b: math.MinInt64, want: 0},
		{name: "negative minus min", a: -100, b: math.MinInt64, want: MaxQuantity - 99}, // -100 + 2^63
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SubSat(tt.a, tt.b); got != tt.want {
				t.Errorf("SubSat(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestVecAt(t *testing.T) {
	v := Vec{1000, 2 * gib}
	tests := []struct {
		name string
		id   SlotID
		want Quantity
	}{
		{name: "first", id: idCPU, want: 1000},
		{name: "second", id: idMem, want: 2 * gib},
		{name: "past the end is zero", id: idCUDAShares, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := v.At(tt.id); got != tt.want {
				t.Errorf("%v.At(%d) = %d, want %d", v, tt.id, got, tt.want)
			}
		})
	}
}

func TestVecCloneIsIndependent(t *testing.T) {
	v := Vec{1000, 2000}
	c := v.Clone()
	c[0] = 1
	if v[0] != 1000 {
		t.Errorf("changing a clone changed the original: %v", v)
	}
	if got := Vec(nil).Clone(); len(got) != 0 {
		t.Errorf("nil.Clone() = %v, want empty", got)
	}
}

func TestVecIsZero(t *testing.T) {
	tests := []struct {
		name string
		v    Vec
		want bool
	}{
		{name: "nil", v: nil, want: true},
		{name: "all zero", v: Vec{0, 0, 0}, want: true},
		{name: "last non-zero", v: Vec{0, 0, 1}, want: false},
		{name: "negative", v: Vec{-1}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.IsZero(); got != tt.want {
				t.Errorf("%v.IsZero() = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

func TestVecAddSub(t *testing.T) {
	tests := []struct {
		name    string
		v, o    Vec
		wantAdd Vec
		wantSub Vec
	}{
		{
			name:    "same length",
			v:       Vec{4000, 8 * gib},
			o:       Vec{1500, 2 * gib},
			wantAdd: Vec{5500, 10 * gib}, // 4000+1500, 8+2 GiB
			wantSub: Vec{2500, 6 * gib},  // 4000-1500, 8-2 GiB
		},
		{
			name:    "shorter operand leaves the tail",
			v:       Vec{4000, 8 * gib, 1000},
			o:       Vec{1000},
			wantAdd: Vec{5000, 8 * gib, 1000},
			wantSub: Vec{3000, 8 * gib, 1000},
		},
		{
			name:    "saturates instead of wrapping",
			v:       Vec{MaxQuantity - 1, math.MinInt64 + 1},
			o:       Vec{2, 2},
			wantAdd: Vec{MaxQuantity, math.MinInt64 + 3},
			wantSub: Vec{MaxQuantity - 3, math.MinInt64}, // -2^63+1-2 clamps
		},
		{
			// Releasing more than was reserved is an accounting error that
			// must show as a negative, not disappear.
			name:    "sub goes negative",
			v:       Vec{1000},
			o:       Vec{3000},
			wantAdd: Vec{4000},
			wantSub: Vec{-2000},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			add := tt.v.Clone()
			add.Add(tt.o)
			if diff := cmp.Diff(tt.wantAdd, add); diff != "" {
				t.Errorf("%v.Add(%v) mismatch (-want +got):\n%s", tt.v, tt.o, diff)
			}
			sub := tt.v.Clone()
			sub.Sub(tt.o)
			if diff := cmp.Diff(tt.wantSub, sub); diff != "" {
				t.Errorf("%v.Sub(%v) mismatch (-want +got):\n%s", tt.v, tt.o, diff)
			}
		})
	}
}

func TestSum(t *testing.T) {
	tests := []struct {
		name string
		a, b Vec
		want Vec
	}{
		{name: "same length", a: Vec{1000, gib}, b: Vec{500, gib}, want: Vec{1500, 2 * gib}},
		{name: "first shorter", a: Vec{1000}, b: Vec{500, gib}, want: Vec{1500, gib}},
		{name: "second shorter", a: Vec{1000, gib}, b: Vec{500}, want: Vec{1500, gib}},
		{name: "saturates", a: Vec{MaxQuantity}, b: Vec{1}, want: Vec{MaxQuantity}},
		{name: "both nil", a: nil, b: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := tt.a.Clone(), tt.b.Clone()
			got := Sum(a, b)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Sum(%v, %v) mismatch (-want +got):\n%s", tt.a, tt.b, diff)
			}
			// Sum returns a new vector; callers keep using their inputs.
			if diff := cmp.Diff(tt.a, a); diff != "" {
				t.Errorf("Sum changed its first argument (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.b, b); diff != "" {
				t.Errorf("Sum changed its second argument (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVecScale(t *testing.T) {
	tests := []struct {
		name string
		v    Vec
		n    int
		want Vec
	}{
		{name: "three kernels", v: Vec{1500, 4 * gib}, n: 3, want: Vec{4500, 12 * gib}}, // 3 * 1500, 3 * 4 GiB
		{name: "one", v: Vec{1500, 4 * gib}, n: 1, want: Vec{1500, 4 * gib}},
		{name: "zero", v: Vec{1500, 4 * gib}, n: 0, want: Vec{0, 0}},
		{name: "saturates", v: Vec{MaxQuantity/2 + 1}, n: 2, want: Vec{MaxQuantity}}, // 2 * (2^62) = 2^63 clamps
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := tt.v.Clone()
			got := tt.v.Scale(tt.n)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%v.Scale(%d) mismatch (-want +got):\n%s", tt.v, tt.n, diff)
			}
			if diff := cmp.Diff(orig, tt.v); diff != "" {
				t.Errorf("Scale changed its receiver (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFits(t *testing.T) {
	r := DefaultRegistry()
	tests := []struct {
		name      string
		req, free Vec
		wantOK    bool
		wantShort Shortfall
		// wantSlot and wantBy restate the shortfall as an operator reads
		// it: which slot, and how much more would be needed.
		wantSlot string
		wantBy   Quantity
	}{
		{name: "exact fit", req: Vec{2000, 4 * gib}, free: Vec{2000, 4 * gib}, wantOK: true},
		{name: "room to spare", req: Vec{1000, gib}, free: Vec{4000, 8 * gib, 1000, 500}, wantOK: true},
		{
			name:      "cpu short",
			req:       Vec{3000, gib},
			free:      Vec{2000, 4 * gib},
			wantShort: Shortfall{Slot: idCPU, Requested: 3000, Available: 2000},
			wantSlot:  "cpu",
			wantBy:    1000, // 3000 - 2000
		},
		{
			name:      "mem short while cpu fits",
			req:       Vec{1000, 6 * gib},
			free:      Vec{2000, 4 * gib},
			wantShort: Shortfall{Slot: idMem, Requested: 6 * gib, Available: 4 * gib},
			wantSlot:  "mem",
			wantBy:    2 * gib, // 6 GiB - 4 GiB
		},
		{
			name:      "lowest failing slot reported",
			req:       Vec{3000, 6 * gib},
			free:      Vec{2000, 4 * gib},
			wantShort: Shortfall{Slot: idCPU, Requested: 3000, Available: 2000},
			wantSlot:  "cpu",
			wantBy:    1000,
		},
		{
			// An agent whose vector predates a slot type lacks it entirely,
			// which must read as zero free, not as unlimited.
			name:      "request longer than free",
			req:       Vec{1000, gib, 0, 250},
			free:      Vec{4000, 8 * gib},
			wantShort: Shortfall{Slot: idCUDAShares, Requested: 250, Available: 0},
			wantSlot:  "cuda.shares",
			wantBy:    250, // 250 - 0
		},
		{name: "request longer than free with zero tail", req: Vec{1000, gib, 0, 0}, free: Vec{4000, 8 * gib}, wantOK: true},
		{name: "free longer than request", req: Vec{1000}, free: Vec{1000, gib, 1000}, wantOK: true},
		{name: "zero request into nothing", req: Vec{0, 0}, free: nil, wantOK: true},
		{name: "nil request", req: nil, free: Vec{0}, wantOK: true},
		{
			name:      "any request into nil free",
			req:       Vec{0, 1},
			free:      nil,
			wantShort: Shortfall{Slot: idMem, Requested: 1, Available: 0},
			wantSlot:  "mem",
			wantBy:    1,
		},
		{name: "unlimited", req: Vec{MaxQuantity, MaxQuantity}, free: Unlimited(4), wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			short, ok := Fits(tt.req, tt.free)
			if ok != tt.wantOK {
				t.Fatalf("Fits(%v, %v) ok = %v, want %v (shortfall %+v)", tt.req, tt.free, ok, tt.wantOK, short)
			}
			if diff := cmp.Diff(tt.wantShort, short); diff != "" {
				t.Errorf("Fits(%v, %v) shortfall mismatch (-want +got):\n%s", tt.req, tt.free, diff)
			}
			if ok {
				return
			}
			if got := r.Type(short.Slot).Name; got != tt.wantSlot {
				t.Errorf("shortfall slot = %q, want %q", got, tt.wantSlot)
			}
			if got := short.Short(); got != tt.wantBy {
				t.Errorf("shortfall Short() = %d, want %d", got, tt.wantBy)
			}
		})
	}
}
