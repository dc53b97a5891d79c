package api

import (
	"maps"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/scheduler/sequence"
)

// applyFairShare lays a request's fair-share fields over f, refusing the
// whole request (field named) on a bad value.
func applyFairShare(req *v1.FairShareRequest, f *domain.FairShare) *apiError {
	if req == nil {
		return nil
	}
	next := domain.FairShare{HalfLife: f.HalfLife, Shares: maps.Clone(f.Shares)}
	if req.HalfLife != nil {
		d, err := time.ParseDuration(*req.HalfLife)
		if err != nil || d < 0 {
			return invalid("fair_share.half_life", "must be a duration such as \"168h\" (\"0s\": the default, 168h)")
		}
		next.HalfLife = d
	}
	for k, v := range req.Shares {
		if next.Shares == nil {
			next.Shares = map[string]float64{}
		}
		if v == 0 {
			delete(next.Shares, k)
			continue
		}
		next.Shares[k] = v
	}
	if len(next.Shares) == 0 {
		next.Shares = nil
	}
	if field, err := next.Validate(); err != nil {
		return invalid(field, "%v", err)
	}
	*f = next
	return nil
}

func wireFairShare(f domain.FairShare) v1.FairShare {
	shares := f.Shares
	if shares == nil {
		shares = map[string]float64{}
	}
	return v1.FairShare{HalfLife: formatDuration(f.EffectiveHalfLife()), Shares: shares}
}

// slotHours turns slot-seconds in a slot's stored unit into slot-hours
// of the unit people read: cores, GiB, devices, shares.
func slotHours(reg *domain.Registry, slot string, amount float64) float64 {
	id, ok := reg.Lookup(slot)
	if !ok {
		return amount / 3600
	}
	k := reg.Type(id).Kind
	per := k.Float(1)
	if k == domain.KindBytes {
		per /= 1 << 30
	}
	return amount * per / 3600
}

// fairShareFactors returns, for a fairshare group's snapshot, each
// association's factor; nil for any other group.
func (s *Server) fairShareFactors(snap *framework.Snapshot) map[framework.Association]*v1.FairShareFactor {
	if snap.Group.Sequencer != domain.FairShareSequencer {
		return nil
	}
	half := formatDuration(snap.Group.FairShare.EffectiveHalfLife())
	out := map[framework.Association]*v1.FairShareFactor{}
	for _, f := range sequence.Factors(snap) {
		o := &v1.FairShareFactor{Project: f.Project, User: f.User, Factor: f.Factor, Usage: f.Usage, UsageSlot: f.Slot,
			Shares: f.Shares, HalfLife: half, DecayedHours: map[string]float64{}}
		for slot, v := range f.Decayed {
			o.DecayedHours[slot] = slotHours(s.slots, slot, v)
		}
		out[framework.Association{Project: f.Project, User: f.User}] = o
	}
	return out
}

func assocOf(ss domain.Session) framework.Association {
	return framework.Association{Project: ss.Owner.Project, User: ss.Owner.User}
}
