package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

const (
	// maxUtilisationPoints caps the steps one answer may hold, so a
	// week at a 1 s step cannot make the store average 600k steps and the
	// client draw them.
	maxUtilisationPoints = 1000
	// defaultUtilisationPoints is what the step is chosen for when the
	// client leaves it out: enough for a chart as wide as a screen.
	defaultUtilisationPoints = 360
	// minDefaultStep is the sample interval: a default step below it would
	// only produce points without samples.
	minDefaultStep = 10 * time.Second
)

// utilisation answers a group's utilisation series. from defaults to an
// hour before to, to to now, step to a whole number of seconds that gives
// about defaultUtilisationPoints points.
func (s *Server) utilisation(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	name := r.PathValue("name")
	if !validID(name) {
		return notFound("no resource group %q", name)
	}
	q := r.URL.Query()
	to := s.clock.Now().UTC()
	if v := q.Get("to"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return invalid("to", "must be an RFC 3339 time, such as 2025-01-16T09:30:00Z")
		}
		to = t.UTC()
	}
	from := to.Add(-time.Hour)
	if v := q.Get("from"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return invalid("from", "must be an RFC 3339 time, such as 2025-01-16T09:30:00Z")
		}
		from = t.UTC()
	}
	if !from.Before(to) {
		return invalid("from", "must be before to")
	}
	span := to.Sub(from)
	step := max(minDefaultStep, (span/defaultUtilisationPoints).Truncate(time.Second)+time.Second)
	if v := q.Get("step"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return invalid("step", "must be a duration of at least 1s, such as 30s or 5m")
		}
		step = d
	}
	if n := (span + step - 1) / step; n > maxUtilisationPoints {
		least := (span + maxUtilisationPoints - 1) / maxUtilisationPoints
		return invalid("step", "gives %d points, more than the %d allowed: use a step of at least %s",
			n, maxUtilisationPoints, least.Round(time.Second)+time.Second)
	}
	if _, err := s.store.GetResourceGroup(ctx, name); errors.Is(err, store.ErrNotFound) {
		return notFound("no resource group %q", name)
	} else if err != nil {
		return err
	}
	points, err := s.store.Utilisation(ctx, name, from, to, step)
	if err != nil {
		return fmt.Errorf("utilisation of %s: %w", name, err)
	}
	writeJSON(w, http.StatusOK, utilisationOut(s.slots, name, from, to, step, points))
	return nil
}

// utilisationOut groups the store's points by slot and writes quantities
// in the slot's written unit. A slot the registry no longer knows is left
// out: its unit is unknown.
func utilisationOut(reg *domain.Registry, group string, from, to time.Time, step time.Duration, points []store.UtilisationPoint) v1.Utilisation {
	out := v1.Utilisation{ResourceGroup: group, From: from, To: to, Step: step.String(), Series: []v1.UtilisationSeries{}}
	index := map[string]int{}
	for _, p := range points {
		id, ok := reg.Lookup(p.Slot)
		if !ok {
			continue
		}
		scale := 1000.0 // counts and shares are stored in thousandths
		if reg.Type(id).Kind == domain.KindBytes {
			scale = 1
		}
		i, seen := index[p.Slot]
		if !seen {
			i = len(out.Series)
			index[p.Slot] = i
			out.Series = append(out.Series, v1.UtilisationSeries{Slot: p.Slot})
		}
		pt := v1.UtilisationPoint{At: p.At.UTC(), Capacity: p.Capacity / scale, Occupied: p.Occupied / scale}
		if p.Capacity > 0 {
			pt.Used = p.Occupied / p.Capacity
		}
		out.Series[i].Points = append(out.Series[i].Points, pt)
	}
	// The store orders by step, so a slot first sampled late came last.
	slices.SortFunc(out.Series, func(a, b v1.UtilisationSeries) int { return strings.Compare(a.Slot, b.Slot) })
	return out
}
