package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// Scanner is what both database/sql rows and pgx rows offer.
type Scanner interface {
	Scan(dest ...any) error
}

// TimeParam converts a time into an engine's parameter; it returns nil for
// the zero time so that "not set" is stored as NULL.
type TimeParam func(time.Time) any

// rawTime keeps whatever the driver produced for a timestamp column so the
// conversion error, if any, can name the row.
type rawTime struct{ src any }

func (r *rawTime) Scan(src any) error {
	r.src = src
	return nil
}

// time converts the scanned value: NULL is the zero time, an integer is
// microseconds since the Unix epoch (SQLite), a time.Time is taken as it is
// (PostgreSQL). Every time comes back in UTC.
func (r rawTime) time() (time.Time, error) {
	switch v := r.src.(type) {
	case nil:
		return time.Time{}, nil
	case int64:
		return time.UnixMicro(v).UTC(), nil
	case time.Time:
		return v.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("timestamp of type %T", r.src)
}

// rowErr collects the first decoding error of one row, so a decoder reads
// as a list of fields rather than a ladder of ifs.
type rowErr struct {
	table, id string
	err       error
}

func (e *rowErr) fail(column string, err error) {
	if e.err == nil && err != nil {
		e.err = &store.CorruptRowError{Table: e.table, ID: e.id, Column: column, Err: err}
	}
}

func (e *rowErr) time(column string, r rawTime) time.Time {
	t, err := r.time()
	e.fail(column, err)
	return t
}

func (e *rowErr) slots(column string, reg *domain.Registry, s string) domain.Vec {
	v, err := DecodeSlots(reg, s)
	e.fail(column, err)
	return v
}

func (e *rowErr) json(column, s string, dst any) {
	e.fail(column, json.Unmarshal([]byte(s), dst))
}

// agentList reads a JSON list of agent ids. Nearly every session's lists
// are empty, and a snapshot reads two per pending session: the empty text
// is answered without encoding/json, which was a quarter of decoding a
// session.
func (e *rowErr) agentList(column, s string) []domain.AgentID {
	if s == "[]" {
		return nil
	}
	var v []domain.AgentID
	e.json(column, s, &v)
	return v
}

func (e *rowErr) sessionStatus(column, s string) domain.SessionStatus {
	if s == "" {
		return 0
	}
	v, err := domain.ParseSessionStatus(s)
	e.fail(column, err)
	return v
}

func (e *rowErr) kernelStatus(column, s string) domain.KernelStatus {
	return parsed(e, column, s, domain.ParseKernelStatus)
}

// parsed reads a column with parse, recording its error on e.
func parsed[T any](e *rowErr, column, s string, parse func(string) (T, error)) T {
	v, err := parse(s)
	e.fail(column, err)
	return v
}

// StatusName writes a status for storage; the zero status becomes "", which
// the schema's CHECK constraints refuse where a status is required.
func StatusName[S interface {
	~uint8
	String() string
}](s S) string {
	if s == 0 {
		return ""
	}
	return s.String()
}

// StatusNames writes a list of statuses for an IN (...) filter.
func StatusNames[S interface {
	~uint8
	String() string
}](ss []S) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = StatusName(s)
	}
	return out
}

// Strings converts a list of string-based identifiers.
func Strings[S ~string](ids []S) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

// marshalOr is v as JSON, or empty when v, of length n, has nothing in
// it. The callers' values are strings, ints and lists and maps of them,
// which always marshal.
func marshalOr(n int, empty string, v any) string {
	if n == 0 {
		return empty
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// JSONList writes a list as a JSON array; nil becomes [].
func JSONList[S ~string](l []S) string {
	return marshalOr(len(l), "[]", l)
}

// JSONPorts writes a kernel's service ports as a JSON list; nil becomes
// "" for an update that keeps what is stored.
func JSONPorts(p []domain.ServicePort) string {
	return marshalOr(len(p), "", p)
}

// JSONMap writes a string map as a JSON object; nil becomes {}.
func JSONMap(m map[string]string) string {
	return marshalOr(len(m), "{}", m)
}

// invalid wraps an input error so engines report it as store.ErrInvalid.
func invalid(what string, err error) error {
	return fmt.Errorf("%s: %w: %v", what, store.ErrInvalid, err)
}

var errEmptyStatus = errors.New("status is empty")

// AddAvoided appends to a stored avoid list (JSON) the agents not on it
// yet, in order, and returns the new JSON. It reports whether it changed.
func AddAvoided(table, id, stored string, agents []domain.AgentID) (string, bool, error) {
	var list []domain.AgentID
	if err := json.Unmarshal([]byte(stored), &list); err != nil {
		return "", false, &store.CorruptRowError{Table: table, ID: id, Column: "avoid_agents", Err: err}
	}
	changed := false
	for _, a := range agents {
		if !slices.Contains(list, a) {
			list = append(list, a)
			changed = true
		}
	}
	return JSONList(list), changed, nil
}

// JSONDevices writes an agent's devices as a JSON list; nil becomes [].
func JSONDevices(d []domain.Device) string {
	return marshalOr(len(d), "[]", d)
}

// JSONGrants writes a kernel's device grants as a JSON list; nil becomes
// [].
func JSONGrants(g []domain.DeviceGrant) string {
	return marshalOr(len(g), "[]", g)
}

// DecodeDevices reads a devices column (an agent's devices or a kernel's
// grants) into out; a row that does not decode is corrupt.
func DecodeDevices[T domain.Device | domain.DeviceGrant](table, id, text string, out *[]T) error {
	if text == "" || text == "[]" {
		*out = nil
		return nil
	}
	if err := json.Unmarshal([]byte(text), out); err != nil {
		return Corrupt(table, id, "devices", err)
	}
	return nil
}
