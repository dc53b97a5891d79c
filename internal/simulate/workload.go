package simulate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/admit"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// A workload is checked against admission's limits when it is read, so a
// bad line is reported with its line number rather than counted as
// refused.
const (
	maxClusterSize  = admit.MaxClusterSize
	minPriority     = admit.MinPriority
	maxPriority     = admit.MaxPriority
	defaultPriority = admit.DefaultPriority
	maxIDLen        = 64
	// maxSeconds bounds every time field, so a duration cannot overflow
	// time.Duration (about 292 years) once converted.
	maxSeconds = 100 * 365 * 24 * 3600
)

// Session is one line of a workload file (docs/SIMULATION.md). Times are
// seconds: Submit from the start of the simulation, Duration how long the
// session runs once all its kernels have started, TimeLimit (0: none) when
// it is stopped if still running.
type Session struct {
	ID          string            `json:"id,omitempty"`
	Submit      float64           `json:"submit_s"`
	User        string            `json:"user"`
	Project     string            `json:"project,omitempty"`
	Type        string            `json:"type,omitempty"`
	Resources   map[string]string `json:"resources"`
	ClusterSize int               `json:"cluster_size,omitempty"`
	ClusterMode string            `json:"cluster_mode,omitempty"`
	Duration    float64           `json:"duration_s"`
	ExitCode    int               `json:"exit_code,omitempty"`
	Priority    *int              `json:"priority,omitempty"`
	DependsOn   []string          `json:"depends_on,omitempty"`
	TimeLimit   float64           `json:"time_limit_s,omitempty"`
	// Preemptible (default: batch only) and Requeue are the session's
	// preemption flags, as at submit.
	Preemptible *bool `json:"preemptible,omitempty"`
	Requeue     bool  `json:"requeue,omitempty"`
}

// Workload is a validated list of sessions in submission order (ties keep
// file order). Every field has its default filled in.
type Workload struct {
	Sessions []Session
}

// LineError says which line and field of a workload is wrong.
type LineError struct {
	Line  int
	Field string
	Err   error
}

func (e *LineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("workload line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("workload line %d: field %s: %v", e.Line, e.Field, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ReadWorkload reads JSONL: one session per line; blank lines and lines
// starting with # are skipped. Resources are checked against reg.
func ReadWorkload(r io.Reader, reg *domain.Registry) (Workload, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var sessions []Session
	var lines []int
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var s Session
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return Workload{}, jsonLineError(n, err)
		}
		if dec.More() {
			return Workload{}, &LineError{Line: n, Err: errors.New("more than one JSON value on the line")}
		}
		sessions = append(sessions, s)
		lines = append(lines, n)
	}
	if err := sc.Err(); err != nil {
		return Workload{}, fmt.Errorf("read workload: %w", err)
	}
	return newWorkload(sessions, lines, reg)
}

// NewWorkload validates sessions made in code (the generator, importers).
func NewWorkload(sessions []Session, reg *domain.Registry) (Workload, error) {
	lines := make([]int, len(sessions))
	for i := range lines {
		lines[i] = i + 1
	}
	return newWorkload(sessions, lines, reg)
}

func jsonLineError(n int, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &LineError{Line: n, Field: te.Field, Err: fmt.Errorf("must be %s, not %s", te.Type, te.Value)}
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &LineError{Line: n, Field: strings.Trim(f, `"`), Err: errors.New("unknown field")}
	}
	return &LineError{Line: n, Err: fmt.Errorf("not a JSON object: %v", err)}
}

func newWorkload(sessions []Session, lines []int, reg *domain.Registry) (Workload, error) {
	seen := make(map[string]float64, len(sessions))
	for i := range sessions {
		s := &sessions[i]
		if err := s.normalise(i, reg); err != nil {
			err.Line = lines[i]
			return Workload{}, err
		}
		if _, dup := seen[s.ID]; dup {
			return Workload{}, &LineError{Line: lines[i], Field: "id", Err: fmt.Errorf("%q is used by an earlier line", s.ID)}
		}
		for j, d := range s.DependsOn {
			at, ok := seen[d]
			if !ok {
				// The API refuses a dependency it does not know; in a
				// file that means one not submitted before.
				return Workload{}, &LineError{Line: lines[i], Field: fmt.Sprintf("depends_on[%d]", j),
					Err: fmt.Errorf("no earlier session %q", d)}
			}
			if at > s.Submit {
				return Workload{}, &LineError{Line: lines[i], Field: fmt.Sprintf("depends_on[%d]", j),
					Err: fmt.Errorf("session %q is submitted later (%gs > %gs)", d, at, s.Submit)}
			}
		}
		seen[s.ID] = s.Submit
	}
	slices.SortStableFunc(sessions, func(a, b Session) int {
		switch {
		case a.Submit < b.Submit:
			return -1
		case a.Submit > b.Submit:
			return 1
		}
		return 0
	})
	return Workload{Sessions: sessions}, nil
}

func (s *Session) normalise(i int, reg *domain.Registry) *LineError {
	bad := func(field, format string, args ...any) *LineError {
		return &LineError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	if s.ID == "" {
		s.ID = fmt.Sprintf("s%06d", i+1)
	}
	if len(s.ID) > maxIDLen || strings.IndexFunc(s.ID, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) >= 0 {
		return bad("id", "must be 1 to %d of A-Z, a-z, 0-9, '-', '_' and '.'", maxIDLen)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"submit_s", s.Submit}, {"duration_s", s.Duration}, {"time_limit_s", s.TimeLimit}} {
		if !(f.v >= 0 && f.v <= maxSeconds) { // also refuses NaN
			return bad(f.name, "must be a number of seconds from 0 to %d, not %v", maxSeconds, f.v)
		}
	}
	if strings.TrimSpace(s.User) == "" {
		return bad("user", "a user is required")
	}
	if s.Project == "" {
		s.Project = "default"
	}
	if s.Type == "" {
		s.Type = string(domain.TypeBatch)
	}
	if _, err := domain.ParseSessionType(s.Type); err != nil {
		return bad("type", "%v", err)
	}
	for _, name := range sortedKeys(s.Resources) {
		if _, _, err := reg.Parse(name, s.Resources[name]); err != nil {
			return bad("resources."+name, "%v", err)
		}
	}
	if s.ClusterSize == 0 {
		s.ClusterSize = 1
	}
	if s.ClusterSize < 1 || s.ClusterSize > maxClusterSize {
		return bad("cluster_size", "must be 1 to %d, not %d", maxClusterSize, s.ClusterSize)
	}
	if s.ClusterMode == "" {
		s.ClusterMode = string(domain.SingleNode)
		if s.ClusterSize > 1 {
			s.ClusterMode = string(domain.MultiNode)
		}
	}
	if _, err := domain.ParseClusterMode(s.ClusterMode); err != nil {
		return bad("cluster_mode", "%v", err)
	}
	if s.ExitCode < 0 || s.ExitCode > 255 {
		return bad("exit_code", "must be 0 to 255, not %d", s.ExitCode)
	}
	if s.Priority == nil {
		p := defaultPriority
		s.Priority = &p
	}
	if s.Preemptible == nil {
		p := domain.DefaultPreemptible(domain.SessionType(s.Type))
		s.Preemptible = &p
	}
	if p := *s.Priority; p < minPriority || p > maxPriority {
		return bad("priority", "must be %d to %d, not %d", minPriority, maxPriority, p)
	}
	return nil
}

// WriteJSONL writes the workload in the file format ReadWorkload reads.
func (w Workload) WriteJSONL(out io.Writer) error {
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	for _, s := range w.Sessions {
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// seconds turns a workload time into a duration at the microsecond, the
// precision both stores keep, so a stored time equals the virtual one.
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s*1e6)) * time.Microsecond
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
