package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Slot vectors are stored as a JSON object from slot name to a decimal
// string of the quantity in the slot kind's base unit (thousandths for
// count and share slots, bytes for byte slots), for example
// {"cpu":"1500","mem":"4294967296"}. Keying by name, not by registry index,
// lets the registry grow and be reordered between runs. Base units as
// integers let SQL sum quantities exactly in both engines (SQLite has no
// decimal type).

// EncodeSlots writes v leaving out zero slots, so a missing key means zero.
func EncodeSlots(reg *domain.Registry, v domain.Vec) (string, error) {
	return encodeVec(reg, v, func(q domain.Quantity) bool { return q == 0 })
}

// EncodeLimits writes a limit vector leaving out unlimited slots
// (MaxQuantity), so a zero limit is kept and a missing key means unlimited.
func EncodeLimits(reg *domain.Registry, v domain.Vec) (string, error) {
	return encodeVec(reg, v, func(q domain.Quantity) bool { return q == domain.MaxQuantity })
}

func encodeVec(reg *domain.Registry, v domain.Vec, skip func(domain.Quantity) bool) (string, error) {
	if len(v) > reg.Len() {
		return "", fmt.Errorf("slot vector has %d slots, the registry only %d", len(v), reg.Len())
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for i, q := range v {
		if skip(q) {
			continue
		}
		if q < 0 {
			return "", fmt.Errorf("slot %q: negative quantity %d", reg.Type(domain.SlotID(i)).Name, q)
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		// Slot names are limited to [a-z0-9._-], so they need no escaping.
		b.WriteByte('"')
		b.WriteString(reg.Type(domain.SlotID(i)).Name)
		b.WriteString(`":"`)
		b.WriteString(strconv.FormatInt(int64(q), 10))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String(), nil
}

// DecodeSlots reads what EncodeSlots wrote into a vector sized for reg. A
// slot name the registry lacks is an error: dropping it would lose a
// reservation.
func DecodeSlots(reg *domain.Registry, s string) (domain.Vec, error) {
	return decodeVec(reg, s, reg.NewVec())
}

// DecodeLimits reads what EncodeLimits wrote; missing slots are unlimited.
func DecodeLimits(reg *domain.Registry, s string) (domain.Vec, error) {
	return decodeVec(reg, s, domain.Unlimited(reg.Len()))
}

func decodeVec(reg *domain.Registry, s string, v domain.Vec) (domain.Vec, error) {
	// A snapshot decodes every agent's capacity and occupancy each round;
	// encoding/json made that most of a round's cost. What EncodeSlots
	// wrote (and PostgreSQL's jsonb gives back, spaced) is read by hand;
	// anything else takes the general path, which also words the errors.
	if fast, ok := decodeVecFast(reg, s, v); ok {
		return fast, nil
	}
	// What the fast path wrote before giving up, the general path writes
	// again or refuses the whole vector.
	return decodeVecJSON(reg, s, v)
}

// decodeVecFast reads a flat object of plain names to decimal strings,
// with optional blanks between tokens. It reports false, leaving v
// partly written, on anything else.
func decodeVecFast(reg *domain.Registry, s string, v domain.Vec) (domain.Vec, bool) {
	i := 0
	blank := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	// str reads a quoted string without escapes.
	str := func() (string, bool) {
		if i >= len(s) || s[i] != '"' {
			return "", false
		}
		start := i + 1
		for j := start; j < len(s); j++ {
			switch s[j] {
			case '"':
				i = j + 1
				return s[start:j], true
			case '\\':
				return "", false
			}
		}
		return "", false
	}
	seen := 0
	blank()
	if i >= len(s) || s[i] != '{' {
		return nil, false
	}
	i++
	blank()
	if i < len(s) && s[i] == '}' {
		i++
		blank()
		return v, i == len(s)
	}
	for {
		blank()
		name, ok := str()
		if !ok {
			return nil, false
		}
		blank()
		if i >= len(s) || s[i] != ':' {
			return nil, false
		}
		i++
		blank()
		num, ok := str()
		if !ok {
			return nil, false
		}
		id, known := reg.Lookup(name)
		n, err := strconv.ParseInt(num, 10, 64)
		if !known || err != nil || int(id) >= 64 || seen&(1<<id) != 0 {
			// Unknown slots, bad numbers and repeated keys are the
			// general path's to judge.
			return nil, false
		}
		seen |= 1 << id
		v[id] = domain.Quantity(n)
		blank()
		if i >= len(s) {
			return nil, false
		}
		switch s[i] {
		case ',':
			i++
		case '}':
			i++
			blank()
			return v, i == len(s)
		default:
			return nil, false
		}
	}
}

func decodeVecJSON(reg *domain.Registry, s string, v domain.Vec) (domain.Vec, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("slot vector: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("slot vector is %s, not an object", s)
	}
	for name, raw := range m {
		id, ok := reg.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("slot %q: %w", name, domain.ErrUnknownSlot)
		}
		q, err := decodeQuantity(raw)
		if err != nil {
			return nil, fmt.Errorf("slot %q: %w", name, err)
		}
		v[id] = q
	}
	return v, nil
}

// decodeQuantity accepts the decimal string EncodeSlots writes and, for an
// operator editing rows by hand, a bare JSON integer.
func decodeQuantity(raw json.RawMessage) (domain.Quantity, error) {
	text := string(raw)
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return 0, err
		}
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("quantity %s is not a base-unit integer", raw)
	}
	return domain.Quantity(n), nil
}
