package v1

import "time"

// FairShareFactor is where a PENDING session's project and user stand
// under the fairshare sequencer: SLURM's classic factor F = 2^(-U/S),
// higher goes first.
type FairShareFactor struct {
	Project string `json:"project"`
	User    string `json:"user"`
	// Factor is F, in (0, 1]; 1 is no past use.
	Factor float64 `json:"factor"`
	// Usage is U: the association's decayed use of its dominant slot
	// (UsageSlot) as a fraction of the group's.
	Usage     float64 `json:"usage"`
	UsageSlot string  `json:"usage_slot,omitempty"`
	// Shares is S: the project's share among the active projects times
	// the user's among the project's active users.
	Shares float64 `json:"shares"`
	// HalfLife is the group's usage half-life.
	HalfLife string `json:"half_life"`
	// DecayedHours is the decayed use per slot in slot-hours: cpu-hours,
	// GiB-hours of memory, device-hours.
	DecayedHours map[string]float64 `json:"decayed_hours"`
}

// UsageReport is the answer of GET /v1/usage: accounting history summed
// per key (user, project, domain or group), slot and step.
type UsageReport struct {
	By    string    `json:"by"`
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Step is how long each point spans ("0s": one point for the range).
	Step  string       `json:"step"`
	Items []UsagePoint `json:"items"`
}

// UsagePoint is one key's use of one slot over one step, in slot-hours:
// cpu-hours, GiB-hours of memory, device-hours (cuda.device), share-hours.
type UsagePoint struct {
	At    time.Time `json:"at"`
	Key   string    `json:"key"`
	Slot  string    `json:"slot"`
	Hours float64   `json:"hours"`
}
