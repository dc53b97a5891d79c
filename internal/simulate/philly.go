package simulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// phillyJob is one entry of Philly's cluster_job_log (Microsoft's
// msr-fiddle/philly-traces): a JSON array of jobs. Fields the importer does
// not use are ignored, as later releases of a trace add some.
type phillyJob struct {
	JobID     string          `json:"jobid"`
	User      string          `json:"user"`
	VC        string          `json:"vc"`
	Status    string          `json:"status"`
	Submitted *string         `json:"submitted_time"` // null when missing
	Attempts  []phillyAttempt `json:"attempts"`
}

type phillyAttempt struct {
	Start  *string `json:"start_time"`
	End    *string `json:"end_time"`
	Detail []struct {
		IP   string   `json:"ip"`
		GPUs []string `json:"gpus"`
	} `json:"detail"`
}

// phillyLayout is how the trace writes times (its own local time; only
// differences are used).
const phillyLayout = "2006-01-02 15:04:05"

// phillyTime reads a time of the trace; false for a missing one (null,
// "", or "None", which the trace writes for an attempt that never
// started or never ended).
func phillyTime(s *string, job, field string) (time.Time, bool, error) {
	if s == nil || *s == "" || *s == "None" {
		return time.Time{}, false, nil
	}
	t, err := time.Parse(phillyLayout, *s)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("job %s: field %s: %q is not a time like %s", job, field, *s, phillyLayout)
	}
	return t, true, nil
}

// ImportPhilly reads Philly's cluster_job_log (a JSON array of jobs: jobid,
// user, vc, status, submitted_time, attempts of {start_time, end_time,
// detail of {ip, gpus}}). A job becomes a batch session submitted at its
// submitted_time, one kernel per machine of its last attempt (the one
// whose end is the job's), the attempt's GPUs shared evenly among them,
// running that attempt's time; vc is the project. The trace gives no CPU
// or memory, so the group's defaults fill them. Pass exits 0, Killed and
// Failed exit 1. Jobs with no attempt that started and ended, or no GPU,
// are dropped and counted. Earlier attempts of a retried job are not
// replayed: their time is neither waited nor run.
func ImportPhilly(r io.Reader, reg *domain.Registry, gpuSlot string) (Workload, ImportStats, error) {
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		if err == nil || errors.Is(err, io.EOF) {
			err = errors.New("want a JSON array of jobs")
		}
		return Workload{}, ImportStats{}, fmt.Errorf("philly: %w", err)
	}
	st := ImportStats{}
	var out []Session
	var first time.Time
	for dec.More() {
		var j phillyJob
		if err := dec.Decode(&j); err != nil {
			return Workload{}, st, fmt.Errorf("philly: job %d: %w", st.Rows+1, err)
		}
		st.Rows++
		s, submitted, why, err := phillySession(j, gpuSlot, len(out)+1)
		if err != nil {
			return Workload{}, st, fmt.Errorf("philly: %w", err)
		}
		if why != "" {
			st.drop(why)
			continue
		}
		if first.IsZero() || submitted.Before(first) {
			first = submitted
		}
		s.Submit = float64(submitted.Unix())
		out = append(out, s)
		st.Kept++
	}
	for i := range out {
		out[i].Submit -= float64(first.Unix())
	}
	w, err := NewWorkload(out, reg)
	if err != nil {
		return Workload{}, st, fmt.Errorf("philly: %w", err)
	}
	return w, st, nil
}

// phillySession is the session of one job and when it was submitted, or
// why the job is dropped.
func phillySession(j phillyJob, gpuSlot string, n int) (Session, time.Time, string, error) {
	submitted, ok, err := phillyTime(j.Submitted, j.JobID, "submitted_time")
	if err != nil || !ok {
		return Session{}, time.Time{}, "no submitted_time", err
	}
	if len(j.Attempts) == 0 {
		return Session{}, time.Time{}, "never started", nil
	}
	last := j.Attempts[len(j.Attempts)-1]
	start, okStart, err := phillyTime(last.Start, j.JobID, "start_time")
	if err != nil {
		return Session{}, time.Time{}, "", err
	}
	end, okEnd, err := phillyTime(last.End, j.JobID, "end_time")
	if err != nil {
		return Session{}, time.Time{}, "", err
	}
	if !okStart || !okEnd || end.Before(start) {
		return Session{}, time.Time{}, "last attempt never started or never ended", nil
	}
	gpus, machines := 0, 0
	for _, d := range last.Detail {
		if len(d.GPUs) > 0 {
			gpus += len(d.GPUs)
			machines++
		}
	}
	switch {
	case gpus == 0:
		return Session{}, time.Time{}, "no GPUs", nil
	case machines > maxClusterSize:
		return Session{}, time.Time{}, "more machines than a session may have", nil
	}
	code := 1
	if j.Status == "Pass" {
		code = 0
	}
	return Session{ID: sanitiseID(j.JobID, n), User: strings.TrimSpace(j.User), Project: strings.TrimSpace(j.VC),
		Type: "batch", ClusterSize: machines, Duration: end.Sub(start).Seconds(), ExitCode: code,
		Resources: map[string]string{gpuSlot: strconv.FormatFloat(float64(gpus)/float64(machines), 'f', 3, 64)},
	}, submitted, "", nil
}
