package simulate

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"
)

// SessionResult is what became of one session of the workload in one
// variant: the per-session output a user reads each wait from. Times are
// seconds of virtual time since the run began; a time that did not happen
// is absent.
type SessionResult struct {
	Variant string   `json:"variant"`
	ID      string   `json:"id"`
	User    string   `json:"user"`
	SubmitS float64  `json:"submit_s"`
	StartS  *float64 `json:"start_s,omitempty"`
	EndS    *float64 `json:"end_s,omitempty"`
	// WaitS is submit to RUNNING. For a session submitted and never
	// started it is submit to the run's end, and Censored says so: the
	// session waited at least that long (right-censored), which a mean of
	// started sessions alone would leave out.
	WaitS    *float64 `json:"wait_s,omitempty"`
	Censored bool     `json:"censored,omitempty"`
	// Status is the store's final status, or REJECTED, UNFINISHED,
	// NOT_SUBMITTED (Variant.Status's words).
	Status string   `json:"status"`
	Agents []string `json:"agents,omitempty"`
	// Reason is why it ended (or was refused at submit).
	Reason string `json:"reason,omitempty"`
}

// sessionResults builds each session's result from the run's records.
func (r *runner) sessionResults(name string, end time.Duration) []SessionResult {
	out := make([]SessionResult, len(r.tr.recs))
	secs := func(d time.Duration) *float64 { s := d.Seconds(); return &s }
	for i, rec := range r.tr.recs {
		s := r.w.Sessions[i]
		res := SessionResult{Variant: name, ID: s.ID, User: s.User, SubmitS: s.Submit, Reason: rec.reason}
		for _, a := range rec.agents {
			res.Agents = append(res.Agents, string(a))
		}
		submit := seconds(s.Submit)
		switch {
		case !rec.submitted:
			res.Status = "NOT_SUBMITTED"
		case rec.rejected != "":
			res.Status, res.Reason = "REJECTED", rec.rejected
		case rec.end < 0:
			res.Status = "UNFINISHED"
		default:
			res.Status = rec.status
		}
		if rec.start >= 0 {
			res.StartS, res.WaitS = secs(rec.start), secs(rec.start-submit)
		} else if rec.submitted && rec.rejected == "" {
			res.WaitS, res.Censored = secs(max(end, rec.end)-submit), true
		}
		if rec.end >= 0 {
			res.EndS = secs(rec.end)
		}
		out[i] = res
	}
	return out
}

// WriteSessionsJSONL writes each variant's session results, one JSON
// object a line.
func (rep Report) WriteSessionsJSONL(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, v := range rep.Variants {
		for _, s := range v.Sessions {
			if err := enc.Encode(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteSessionsCSV writes each variant's session results as CSV with a
// header; absent times are empty cells, agents joined by spaces.
func (rep Report) WriteSessionsCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"variant", "id", "user", "submit_s", "start_s", "end_s", "wait_s", "censored", "status", "agents", "reason"})
	num := func(f *float64) string {
		if f == nil {
			return ""
		}
		return strconv.FormatFloat(*f, 'f', -1, 64)
	}
	for _, v := range rep.Variants {
		for _, s := range v.Sessions {
			_ = cw.Write([]string{s.Variant, s.ID, s.User, strconv.FormatFloat(s.SubmitS, 'f', -1, 64), num(s.StartS),
				num(s.EndS), num(s.WaitS), strconv.FormatBool(s.Censored), s.Status, strings.Join(s.Agents, " "), s.Reason})
		}
	}
	cw.Flush()
	return cw.Error()
}
