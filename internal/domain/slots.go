package domain

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
)

// Kind says how a slot type's quantities are written and stored.
type Kind uint8

const (
	// KindCount is for things counted in units that may be split, such as CPU
	// cores or whole devices. Stored in thousandths.
	KindCount Kind = iota + 1
	// KindBytes is for memory and storage. Stored in whole bytes, written with
	// binary suffixes (k, m, g, t, p).
	KindBytes
	// KindShares is for fractional device shares (cuda.shares). Stored in
	// thousandths.
	KindShares
)

// fractionDigits is how many decimals count and share quantities keep.
const fractionDigits = 3

func (k Kind) String() string {
	switch k {
	case KindCount:
		return "count"
	case KindBytes:
		return "bytes"
	case KindShares:
		return "shares"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind reads a kind's name as String writes it.
func ParseKind(s string) (Kind, error) {
	switch s {
	case "count":
		return KindCount, nil
	case "bytes":
		return KindBytes, nil
	case "shares":
		return KindShares, nil
	}
	return 0, fmt.Errorf("unknown slot kind %q (want count, bytes or shares)", s)
}

// Float is q in the kind's written unit (cores, bytes, shares), for
// figures such as metrics that need no exactness.
func (k Kind) Float(q Quantity) float64 { return float64(q) / float64(k.scale()) }

// scale is how many stored units make one written unit.
func (k Kind) scale() uint64 {
	if k == KindBytes {
		return 1
	}
	return 1000
}

// Quantity is an exact amount of one slot type in that type's stored unit
// (thousandths for count and shares, bytes for bytes). It is never negative
// in valid data; arithmetic saturates at the int64 limits instead of
// wrapping, so a corrupt sum shows up as a huge number, not a small one.
type Quantity int64

// MaxQuantity is the saturation ceiling; limits use it to mean "unlimited".
const MaxQuantity = Quantity(math.MaxInt64)

// AddSat returns a+b, clamped to the int64 range.
func AddSat(a, b Quantity) Quantity {
	s := a + b
	if (s > a) == (b > 0) {
		return s
	}
	if b > 0 {
		return MaxQuantity
	}
	return Quantity(math.MinInt64)
}

// SubSat returns a-b, clamped to the int64 range. It may go below zero: a
// negative result is an accounting error the caller should see, not hide.
func SubSat(a, b Quantity) Quantity {
	if b == Quantity(math.MinInt64) {
		if a >= 0 {
			return MaxQuantity
		}
		return a - b
	}
	return AddSat(a, -b)
}

// SlotID is a slot type's index in its Registry; Vec is indexed by it.
type SlotID uint16

// SlotType is a named resource with a kind, such as "mem" in bytes.
type SlotType struct {
	Name string
	Kind Kind
}

// Registry interns slot type names to dense indexes. It is immutable once
// built, so it can be shared by concurrent readers without locks. There is
// no global registry: callers build one and pass it down.
type Registry struct {
	types []SlotType
	index map[string]SlotID
}

// ErrUnknownSlot is wrapped by every error about a slot name the registry
// does not hold.
var ErrUnknownSlot = errors.New("unknown slot type")

// NewRegistry interns the given slot types in order.
func NewRegistry(types ...SlotType) (*Registry, error) {
	r := &Registry{index: make(map[string]SlotID, len(types))}
	for _, t := range types {
		if err := validSlotName(t.Name); err != nil {
			return nil, err
		}
		if t.Kind < KindCount || t.Kind > KindShares {
			return nil, fmt.Errorf("slot %q: invalid kind %d", t.Name, t.Kind)
		}
		if _, dup := r.index[t.Name]; dup {
			return nil, fmt.Errorf("slot %q registered twice", t.Name)
		}
		if len(r.types) > math.MaxUint16 {
			return nil, errors.New("too many slot types")
		}
		r.index[t.Name] = SlotID(len(r.types))
		r.types = append(r.types, t)
	}
	return r, nil
}

// DefaultSlotTypes are the slot types every installation knows.
func DefaultSlotTypes() []SlotType {
	return []SlotType{
		{Name: "cpu", Kind: KindCount},
		{Name: "mem", Kind: KindBytes},
		{Name: "cuda.device", Kind: KindCount},
		{Name: "cuda.shares", Kind: KindShares},
	}
}

// DefaultRegistry returns a registry of DefaultSlotTypes.
func DefaultRegistry() *Registry {
	r, err := NewRegistry(DefaultSlotTypes()...)
	if err != nil {
		panic(err) // the defaults are constants; this cannot fail
	}
	return r
}

func validSlotName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("slot name %q must be 1 to 64 characters", name)
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("slot name %q may hold only a-z, 0-9, '.', '_' and '-'", name)
		}
	}
	return nil
}

// Len is the number of slot types, and so the length of every Vec.
func (r *Registry) Len() int { return len(r.types) }

// Types returns the slot types in index order. The slice is a copy.
func (r *Registry) Types() []SlotType { return append([]SlotType(nil), r.types...) }

// Type returns the slot type at id.
func (r *Registry) Type(id SlotID) SlotType { return r.types[id] }

// Lookup finds a slot type by name.
func (r *Registry) Lookup(name string) (SlotID, bool) {
	id, ok := r.index[name]
	return id, ok
}

// Parse reads a quantity of the named slot. The error names the slot.
func (r *Registry) Parse(slot, s string) (SlotID, Quantity, error) {
	id, ok := r.index[slot]
	if !ok {
		return 0, 0, fmt.Errorf("slot %q: %w", slot, ErrUnknownSlot)
	}
	q, err := ParseQuantity(r.types[id].Kind, s)
	if err != nil {
		return 0, 0, fmt.Errorf("slot %q: %w", slot, err)
	}
	return id, q, nil
}

// Format writes a quantity of the slot at id so that Parse reads it back
// exactly.
func (r *Registry) Format(id SlotID, q Quantity) string {
	return FormatQuantity(r.types[id].Kind, q)
}

// NewVec returns a zero vector sized for the registry.
func (r *Registry) NewVec() Vec { return make(Vec, len(r.types)) }

// ParseSlots reads a name→quantity map, as the API and the store carry it,
// into a Vec. A missing key means zero.
func (r *Registry) ParseSlots(m map[string]string) (Vec, error) {
	v := r.NewVec()
	// Sorted so the first error reported is the same on every call.
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		id, q, err := r.Parse(name, m[name])
		if err != nil {
			return nil, err
		}
		v[id] = q
	}
	return v, nil
}

// FormatSlots writes a Vec as a name→quantity map, leaving out zeros.
func (r *Registry) FormatSlots(v Vec) map[string]string {
	m := make(map[string]string)
	for i, q := range v {
		if q != 0 && i < len(r.types) {
			m[r.types[i].Name] = r.Format(SlotID(i), q)
		}
	}
	return m
}

// Vec is a dense vector of quantities indexed by SlotID. A slot beyond the
// end of a shorter Vec counts as zero.
type Vec []Quantity

// At returns the quantity at id, zero when v is too short to hold it.
func (v Vec) At(id SlotID) Quantity {
	if int(id) < len(v) {
		return v[id]
	}
	return 0
}

// Clone returns a copy of v.
func (v Vec) Clone() Vec { return append(Vec(nil), v...) }

// IsZero reports whether every slot is zero.
func (v Vec) IsZero() bool {
	for _, q := range v {
		if q != 0 {
			return false
		}
	}
	return true
}

// Add adds o into v, saturating. v must be at least as long as o.
func (v Vec) Add(o Vec) {
	for i, q := range o {
		v[i] = AddSat(v[i], q)
	}
}

// Sub subtracts o from v, saturating. v must be at least as long as o.
func (v Vec) Sub(o Vec) {
	for i, q := range o {
		v[i] = SubSat(v[i], q)
	}
}

// Sum returns a new vector a+b.
func Sum(a, b Vec) Vec {
	if len(a) < len(b) {
		a, b = b, a
	}
	out := a.Clone()
	out.Add(b)
	return out
}

// Scale returns v multiplied by n, saturating.
func (v Vec) Scale(n int) Vec {
	out := make(Vec, len(v))
	for i, q := range v {
		for range n {
			out[i] = AddSat(out[i], q)
		}
	}
	return out
}

// Shortfall names the first slot where a request does not fit and by how
// much it is short.
type Shortfall struct {
	Slot      SlotID
	Requested Quantity
	Available Quantity
}

// Short is how much more of the slot would be needed.
func (s Shortfall) Short() Quantity { return SubSat(s.Requested, s.Available) }

// Fits reports whether req fits into free, slot by slot. A slot missing from
// either vector counts as zero, so a request for a slot an agent lacks never
// fits and a zero request always fits. When it does not fit, the shortfall
// names the lowest-indexed failing slot.
func Fits(req, free Vec) (Shortfall, bool) {
	for i, q := range req {
		if q == 0 {
			continue
		}
		var f Quantity
		if i < len(free) {
			f = free[i]
		}
		if q > f {
			return Shortfall{Slot: SlotID(i), Requested: q, Available: f}, false
		}
	}
	return Shortfall{}, true
}

// ParseQuantity reads a non-negative decimal quantity of the given kind:
// "2", "0.5", "1.25" for counts and shares (at most three decimals); "4g",
// "512m", "1.5G", "4Gi", "2GiB", "1024" for bytes (binary suffixes, whole
// bytes only).
func ParseQuantity(k Kind, s string) (Quantity, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty quantity")
	}
	if s[0] == '-' {
		return 0, fmt.Errorf("quantity %q is negative", orig)
	}
	if s[0] == '+' {
		s = s[1:]
		if s == "" {
			return 0, fmt.Errorf("quantity %q is not a decimal number", orig)
		}
	}
	mult := uint64(1)
	suffix := byte(0)
	// "Gi" and "GiB" are how Kubernetes and most tools write the same binary
	// units, and users type them from habit; they mean what "g" means here.
	if t, ok := strings.CutSuffix(s, "iB"); ok {
		s = t + "i"
	}
	if n := len(s); n >= 2 && (s[n-1] == 'i' || s[n-1] == 'I') && isLetter(s[n-2]) {
		s = s[:n-1]
	}
	if last := s[len(s)-1]; last < '0' || last > '9' {
		suffix, s = last, s[:len(s)-1]
	}
	if n := len(s); n > 1 && isLetter(s[n-1]) && (s[n-2] == '.' || s[n-2] >= '0' && s[n-2] <= '9') {
		// "4GB", "4kb": units of two letters we do not read, named as such
		// rather than called "not a number".
		return 0, fmt.Errorf("quantity %q: unknown unit suffix %q (%s)", orig, s[n-1:]+string(suffix), unitHelp)
	}
	intPart, frac, hasDot := strings.Cut(s, ".")
	if intPart == "" && frac == "" || hasDot && frac == "" || !digits(intPart) || !digits(frac) {
		return 0, fmt.Errorf("quantity %q is not a decimal number", orig)
	}
	if suffix != 0 {
		shift, ok := suffixShift(suffix)
		if !ok {
			return 0, fmt.Errorf("quantity %q: unknown unit suffix %q (%s)", orig, string(suffix), unitHelp)
		}
		if k != KindBytes {
			return 0, fmt.Errorf("quantity %q: unit suffixes are only for byte slots", orig)
		}
		mult = 1 << shift
	}
	if len(frac) > 18 {
		return 0, fmt.Errorf("quantity %q has too many decimal places", orig)
	}
	// value = (intPart.frac) * mult * scale, which must come out whole.
	mantissa, ok := parseDigits(intPart + frac)
	if !ok {
		return 0, fmt.Errorf("quantity %q overflows", orig)
	}
	// The product is kept at 128 bits because it may exceed 64 even when the
	// quotient fits: "9223372036854775.807" is MaxQuantity thousandths, which
	// FormatQuantity writes and so must parse back.
	hi, lo := bits.Mul64(mantissa, mult*k.scale())
	den := pow10(len(frac))
	if hi >= den {
		return 0, fmt.Errorf("quantity %q overflows", orig)
	}
	v, rem := bits.Div64(hi, lo, den)
	if rem != 0 {
		if k == KindBytes {
			return 0, fmt.Errorf("quantity %q is not a whole number of bytes", orig)
		}
		return 0, fmt.Errorf("quantity %q has more than %d decimal places", orig, fractionDigits)
	}
	if v > math.MaxInt64 {
		return 0, fmt.Errorf("quantity %q overflows", orig)
	}
	return Quantity(v), nil
}

// FormatQuantity writes q so ParseQuantity reads back the same value.
func FormatQuantity(k Kind, q Quantity) string {
	neg := q < 0
	u := uint64(q)
	if neg {
		u = uint64(-(q + 1)) + 1
	}
	var s string
	if k == KindBytes {
		s = formatBytes(u)
	} else {
		whole, frac := u/1000, u%1000
		s = fmt.Sprintf("%d", whole)
		if frac != 0 {
			s += strings.TrimRight(fmt.Sprintf(".%03d", frac), "0")
		}
	}
	if neg {
		return "-" + s
	}
	return s
}

var byteSuffixes = []struct {
	shift uint
	name  string
}{{50, "p"}, {40, "t"}, {30, "g"}, {20, "m"}, {10, "k"}}

func formatBytes(u uint64) string {
	if u != 0 {
		for _, sfx := range byteSuffixes {
			if u%(1<<sfx.shift) == 0 {
				return fmt.Sprintf("%d%s", u>>sfx.shift, sfx.name)
			}
		}
	}
	return fmt.Sprintf("%d", u)
}

const unitHelp = "want k, m, g, t or p (binary: g = 2^30 bytes), also written Ki, Mi, Gi, Ti, Pi or KiB…PiB"

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func suffixShift(c byte) (uint, bool) {
	switch c | 0x20 { // lower-case ASCII
	case 'k':
		return 10, true
	case 'm':
		return 20, true
	case 'g':
		return 30, true
	case 't':
		return 40, true
	case 'p':
		return 50, true
	}
	return 0, false
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func parseDigits(s string) (uint64, bool) {
	var v uint64
	for i := 0; i < len(s); i++ {
		hi, lo := bits.Mul64(v, 10)
		if hi != 0 {
			return 0, false
		}
		sum, carry := bits.Add64(lo, uint64(s[i]-'0'), 0)
		if carry != 0 {
			return 0, false
		}
		v = sum
	}
	return v, true
}

func pow10(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}
