package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/store"
)

// maxUsagePoints bounds one answer: a year by the hour for a few keys is
// already more than a plot can show.
const maxUsagePoints = 100_000

// parseSpan reads a span back from now: a Go duration, or whole days
// ("30d"), as sacct users write them.
func parseSpan(field, v string) (time.Duration, *apiError) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 && n <= 3660 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, invalid(field, "must be a duration such as \"12h\" or whole days such as \"30d\", not %q", v)
	}
	return d, nil
}

// usageQuery is what GET /v1/usage was asked, checked.
type usageQuery struct {
	filter store.UsageFilter
	step   time.Duration
}

func (s *Server) readUsageQuery(r *http.Request) (usageQuery, *apiError) {
	q := r.URL.Query()
	u := caller(r.Context())
	now := s.clock.Now().UTC()
	var out usageQuery
	since := 30 * 24 * time.Hour
	if v := q.Get("since"); v != "" {
		var e *apiError
		if since, e = parseSpan("since", v); e != nil {
			return out, e
		}
	}
	// No upper bound: no hour after the current one has use yet.
	out.filter = store.UsageFilter{Since: now.Add(-since).Truncate(time.Hour),
		By: store.UsageBy(q.Get("by")), Group: q.Get("group"), User: q.Get("user"), Project: q.Get("project"), Slot: q.Get("slot")}
	switch out.filter.By {
	case "":
		out.filter.By = store.UsageByUser
	case store.UsageByUser, store.UsageByProject, store.UsageByDomain, store.UsageByGroup:
	default:
		return out, invalid("by", "must be user, project, domain or group, not %q", out.filter.By)
	}
	if sl := out.filter.Slot; sl != "" {
		if _, ok := s.slots.Lookup(sl); !ok {
			return out, invalid("slot", "unknown slot %q", sl)
		}
	}
	if v := q.Get("step"); v != "" {
		d, e := parseSpan("step", v)
		if e != nil {
			return out, e
		}
		if d != 0 && (d < time.Hour || d%time.Hour != 0) {
			return out, invalid("step", "must be 0 (one point for the range) or whole hours, not %s", v)
		}
		out.step = d
	}
	if !isAdmin(u) {
		// A user's own use only, whatever the key.
		if out.filter.User != "" && out.filter.User != u.Name {
			return out, forbidden("only admins may read another user's usage")
		}
		out.filter.User = u.Name
	}
	return out, nil
}

// usageHistory answers GET /v1/usage: the hourly history summed per key,
// slot and step, in slot-hours.
func (s *Server) usageHistory(w http.ResponseWriter, r *http.Request) error {
	uq, e := s.readUsageQuery(r)
	if e != nil {
		return e
	}
	rows, err := s.store.UsageHistory(r.Context(), uq.filter)
	if err != nil {
		return err
	}
	out := v1.UsageReport{By: string(uq.filter.By), Since: uq.filter.Since, Until: s.clock.Now().UTC(),
		Step: formatDuration(uq.step), Items: []v1.UsagePoint{}}
	type key struct {
		at        time.Time
		key, slot string
	}
	at := map[key]int{}
	for _, row := range rows {
		k := key{at: uq.filter.Since, key: row.Key, slot: row.Slot}
		if uq.step > 0 {
			k.at = uq.filter.Since.Add(row.Hour.Sub(uq.filter.Since) / uq.step * uq.step)
		}
		i, ok := at[k]
		if !ok {
			if len(out.Items) >= maxUsagePoints {
				return invalid("step", "more than %d points: ask for a coarser step or a shorter range", maxUsagePoints)
			}
			i = len(out.Items)
			at[k] = i
			out.Items = append(out.Items, v1.UsagePoint{At: k.at, Key: row.Key, Slot: row.Slot})
		}
		out.Items[i].Hours += slotHours(s.slots, row.Slot, row.Amount)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
