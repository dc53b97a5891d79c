package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func arrayPath(ref string, rest ...string) string {
	return "/v1/arrays/" + url.PathEscape(ref) + strings.Join(rest, "")
}

// asArray is how a session verb reaches an array: when ref named no
// session (404) and is not an element's name[i], the array it names, if
// any. found is false, with err nil, when ref names no array either: the
// caller then reports the session's error, which says how sessions are
// named.
func asArray(ctx context.Context, c *client, ref string, sessionErr error) (a v1.Array, raw []byte, found bool, err error) {
	var ae *apiError
	if !errors.As(sessionErr, &ae) || ae.Status != http.StatusNotFound || strings.ContainsAny(ref, "[]") {
		return a, nil, false, nil
	}
	raw, err = c.do(ctx, "GET", arrayPath(ref), nil, &a)
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return a, nil, false, nil
	}
	return a, raw, err == nil, err
}

// arrayCounts says how many elements are in each status, most first.
func arrayCounts(statuses map[string]int) string {
	names := make([]string, 0, len(statuses))
	for st := range statuses {
		names = append(names, st)
	}
	sort.Slice(names, func(i, j int) bool {
		if statuses[names[i]] != statuses[names[j]] {
			return statuses[names[i]] > statuses[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, st := range names {
		parts[i] = fmt.Sprintf("%d %s", statuses[st], st)
	}
	return strings.Join(parts, ", ")
}

// arrayLine is an array in one line: name, size, cap and counts.
func arrayLine(a v1.Array) string {
	line := fmt.Sprintf("array %s: %d elements", a.Name, a.Count)
	if a.MaxRunning > 0 {
		line += fmt.Sprintf(", at most %d at once (%%%d)", a.MaxRunning, a.MaxRunning)
	}
	line += ": " + arrayCounts(a.Statuses)
	if a.Outcome != "" {
		line += "; outcome " + a.Outcome
	}
	return line
}

// createArray submits an array and, with --wait-end, waits for every
// element to end; it succeeds only when all of them succeeded.
func createArray(cmd *cobra.Command, c *client, o *output, body v1.CreateSessionRequest, cf createFlags) error {
	ctx := cmd.Context()
	var a v1.Array
	raw, err := c.do(ctx, "POST", "/v1/arrays", body, &a)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if !cf.waitEnd {
		if o.json() {
			return printJSON(out, raw)
		}
		fmt.Fprintf(out, "%s  %s\n", a.ID, arrayLine(a))
		return nil
	}
	progress := out
	if o.json() {
		progress = cmd.ErrOrStderr()
	}
	fmt.Fprintf(progress, "%s  %s\n", a.ID, arrayLine(a))
	a, raw, err = waitArray(ctx, c, a, progress, cf.timeout)
	if o.json() && raw != nil {
		_ = printJSON(out, raw)
	}
	return err
}

// arrayPoll is how often a wait for an array asks how it stands.
const arrayPoll = time.Second

// waitArray polls the array until no element is live, printing its
// counts whenever they change.
func waitArray(ctx context.Context, c *client, a v1.Array, out io.Writer, timeout time.Duration) (v1.Array, []byte, error) {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	last := arrayCounts(a.Statuses)
	tick := time.NewTicker(arrayPoll)
	defer tick.Stop()
	var raw []byte
	for a.Live > 0 {
		select {
		case <-ctx.Done():
			return a, raw, nil // Ctrl-C stops waiting, as for a session
		case <-deadline:
			return a, raw, fmt.Errorf("array %s: %w after %s: %s", a.Name, errWaitTimeout, timeout, arrayCounts(a.Statuses))
		case <-tick.C:
		}
		// Decoded afresh: into the old value, its Statuses map would keep
		// the counts of statuses no element has any more.
		var next v1.Array
		var err error
		if raw, err = c.do(ctx, "GET", "/v1/arrays/"+url.PathEscape(a.ID), nil, &next); err != nil {
			return a, raw, err
		}
		a = next
		if now := arrayCounts(a.Statuses); now != last {
			fmt.Fprintf(out, "%s  %s\n", time.Now().Format(time.TimeOnly), now)
			last = now
		}
	}
	fmt.Fprintln(out, arrayLine(a))
	if a.Outcome != "success" {
		return a, raw, fmt.Errorf("array %s: %w (%s)", a.Name, errWaitEnded, a.Outcome)
	}
	return a, raw, nil
}

// showArray prints an array and its elements.
func showArray(w io.Writer, a v1.Array) error {
	for _, r := range [][]string{{"ID", a.ID}, {"Name", a.Name}, {"Owner", a.Owner}, {"Spec", a.Spec},
		{"Elements", strconv.Itoa(a.Count)}, {"At once", capText(a.MaxRunning)}, {"Created", when(&a.CreatedAt)},
		{"Statuses", arrayCounts(a.Statuses)}, {"Outcome", orDash(a.Outcome)}} {
		fmt.Fprintf(w, "%-11s %s\n", r[0]+":", r[1])
	}
	fmt.Fprintln(w)
	rows := make([][]string, len(a.Elements))
	for i, e := range a.Elements {
		rows[i] = []string{e.Name, shortID(e.ID), e.Status, orDash(e.Outcome)}
	}
	return table(w, []string{"ELEMENT", "ID", "STATUS", "RESULT"}, rows)
}

func capText(n int) string {
	if n == 0 {
		return "no cap"
	}
	return fmt.Sprintf("%d (%%%d)", n, n)
}

// whyArray says how the array stands and, for its first PENDING
// element, what holds it.
func whyArray(ctx context.Context, c *client, w io.Writer, a v1.Array) error {
	fmt.Fprintln(w, arrayLine(a))
	i := slices.IndexFunc(a.Elements, func(e v1.ArrayElement) bool { return e.Status == "PENDING" })
	if i < 0 {
		return nil
	}
	var why v1.Why
	if _, err := c.do(ctx, "GET", sessionPath(a.Elements[i].ID, "/why"), nil, &why); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s, the first PENDING element: ", a.Elements[i].Name)
	printWhy(w, why)
	return nil
}

// arrayLogs prints the main kernel's log of every element that ran, each
// under a header, in index order.
func arrayLogs(ctx context.Context, c *client, out io.Writer, a v1.Array, kernel string) error {
	for _, e := range a.Elements {
		if e.Status == "PENDING" || e.Status == "CANCELLED" {
			continue
		}
		fmt.Fprintf(out, "==> %s (%s) <==\n", e.Name, e.Status)
		f := logFollower{c: c, id: e.ID, kernel: kernel, out: out}
		if _, err := f.read(ctx); err != nil {
			fmt.Fprintf(out, "(no log: %v)\n", err)
		}
	}
	return nil
}

// removeArray ends every live element of the array ref names.
func removeArray(ctx context.Context, c *client, o *output, out io.Writer, a v1.Array, force bool) error {
	path := arrayPath(a.ID)
	if force {
		path += "?force=true"
	}
	var removed v1.ArrayRemoved
	raw, err := c.do(ctx, "DELETE", path, nil, &removed)
	if err != nil {
		return err
	}
	if o.json() {
		return printJSON(out, raw)
	}
	fmt.Fprintf(out, "%s  ended %d elements; %s\n", a.ID, removed.Ended, arrayLine(removed.Array))
	return nil
}

// arrayRows folds the listed elements of each array into one row, at the
// place of its newest listed element, counting their statuses; with
// elements, every session is its own row.
func arrayRows(sessions []v1.Session, row func(v1.Session) []string, elements bool) [][]string {
	type group struct {
		at       int
		name     string
		statuses map[string]int
		outcomes map[string]int
		first    v1.Session
		min, max int
	}
	var rows [][]string
	groups := map[string]*group{}
	for _, s := range sessions {
		if elements || s.Array == "" || s.ArrayIndex == nil {
			rows = append(rows, row(s))
			continue
		}
		g, ok := groups[s.Array]
		if !ok {
			base, _, _ := strings.Cut(s.Name, "[")
			g = &group{at: len(rows), name: base, statuses: map[string]int{}, outcomes: map[string]int{}, first: s,
				min: *s.ArrayIndex, max: *s.ArrayIndex}
			groups[s.Array] = g
			rows = append(rows, nil)
		}
		g.statuses[s.Status]++
		if s.Outcome != "" {
			g.outcomes[s.Outcome]++
		}
		g.min, g.max = min(g.min, *s.ArrayIndex), max(g.max, *s.ArrayIndex)
	}
	for _, g := range groups {
		r := row(g.first)
		r[0], r[1] = shortID(g.first.Array), fmt.Sprintf("%s[%d-%d]", g.name, g.min, g.max)
		r[4], r[5], r[6] = arrayCounts(g.statuses), orDash(arrayCounts(g.outcomes)), "-"
		rows[g.at] = r
	}
	return rows
}

// errNotArray says a reference names no array: the session verb goes on.
var errNotArray = errors.New("not an array")

// sessionOrArray reads the session ref names; when there is none, the
// array it names instead (found). err is errNotArray when ref names
// neither, or names a session.
func sessionOrArray(ctx context.Context, c *client, ref string) (a v1.Array, raw []byte, err error) {
	_, serr := c.do(ctx, "GET", sessionPath(ref), nil, nil)
	if serr == nil {
		return a, nil, errNotArray
	}
	a, raw, found, err := asArray(ctx, c, ref, serr)
	if err == nil && !found {
		err = errNotArray
	}
	return a, raw, err
}

// showAsArray shows the array ref names when it names no session.
func showAsArray(cmd *cobra.Command, o *output, ref string) (done bool, err error) {
	c, err := newClient(cmd)
	if err != nil {
		return true, err
	}
	a, raw, err := sessionOrArray(cmd.Context(), c, ref)
	switch {
	case errors.Is(err, errNotArray):
		return false, nil
	case err != nil:
		return true, err
	case o.json():
		return true, printJSON(cmd.OutOrStdout(), raw)
	}
	return true, showArray(cmd.OutOrStdout(), a)
}

// arrayLogsFor prints the logs of every element of the array f.id names;
// errNotArray when it names a session (or nothing).
func arrayLogsFor(ctx context.Context, c *client, f *logFollower, follow bool) error {
	a, _, err := sessionOrArray(ctx, c, f.id)
	if err != nil {
		return err
	}
	if follow {
		return fmt.Errorf("-f follows one session: give one element, such as %s[%d]", a.Name, firstIndex(a))
	}
	return arrayLogs(ctx, c, f.out, a, f.kernel)
}

func firstIndex(a v1.Array) int {
	if len(a.Elements) == 0 {
		return 0
	}
	return a.Elements[0].Index
}
