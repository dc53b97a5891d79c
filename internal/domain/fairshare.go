package domain

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// FairShareSequencer is the name of the sequencer that orders a group's
// queue by decayed usage against shares; the store loads the group's usage
// history only for it.
const FairShareSequencer = "fairshare"

// DefaultFairShareHalfLife is SLURM's PriorityDecayHalfLife default.
const DefaultFairShareHalfLife = 7 * 24 * time.Hour

// FairShare is a resource group's fair-share settings, read by the
// fairshare sequencer only.
type FairShare struct {
	// HalfLife is how long it takes past usage to count half as much (0:
	// DefaultFairShareHalfLife).
	HalfLife time.Duration
	// Shares are the shares of users ("user:NAME") and projects
	// ("project:NAME"); a name missing has 1.
	Shares map[string]float64
}

// EffectiveHalfLife is HalfLife, or the default when it is unset.
func (f FairShare) EffectiveHalfLife() time.Duration {
	if f.HalfLife <= 0 {
		return DefaultFairShareHalfLife
	}
	return f.HalfLife
}

// UserShare and ProjectShare are the raw shares of a name: 1 unless set.
func (f FairShare) UserShare(name string) float64    { return f.share("user:" + name) }
func (f FairShare) ProjectShare(name string) float64 { return f.share("project:" + name) }

func (f FairShare) share(key string) float64 {
	if v, ok := f.Shares[key]; ok {
		return v
	}
	return 1
}

// MaxFairShareHalfLife bounds the half-life to what the store can weigh:
// a year.
const MaxFairShareHalfLife = 365 * 24 * time.Hour

// Validate checks the settings, naming the field that is wrong.
func (f FairShare) Validate() (field string, err error) {
	if f.HalfLife < 0 || f.HalfLife > MaxFairShareHalfLife || (f.HalfLife > 0 && f.HalfLife < time.Minute) {
		return "fair_share.half_life", fmt.Errorf("half-life %v: must be 0 (default %v) or between 1m and %v",
			f.HalfLife, DefaultFairShareHalfLife, MaxFairShareHalfLife)
	}
	for k, v := range f.Shares {
		kind, name, ok := strings.Cut(k, ":")
		if !ok || (kind != "user" && kind != "project") || name == "" {
			return "fair_share.shares", fmt.Errorf("share %q: must be user:NAME or project:NAME", k)
		}
		if !(v > 0) || math.IsInf(v, 0) || v > 1e6 {
			return "fair_share.shares", fmt.Errorf("share %s=%v: must be above 0 and at most 1000000", k, v)
		}
	}
	return "", nil
}
