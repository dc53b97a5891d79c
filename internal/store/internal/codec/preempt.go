package codec

import (
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// ScanPreemption reads victim, preemptor, at of the preemptions table.
func ScanPreemption(sc Scanner) (framework.PreemptionRecord, error) {
	var (
		r                 framework.PreemptionRecord
		victim, preemptor string
		at                rawTime
	)
	if err := sc.Scan(&victim, &preemptor, &at); err != nil {
		return r, err
	}
	e := rowErr{table: "preemptions", id: victim}
	r.Victim, r.Preemptor, r.At = domain.SessionID(victim), domain.SessionID(preemptor), e.time("at", at)
	return r, e.err
}
