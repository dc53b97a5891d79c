package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// accountingFlags are `sokovan usage`'s accounting flags: given any of
// them, usage reports the history (GET /v1/usage) rather than the
// caller's quotas.
type accountingFlags struct {
	since, by, slot, group, user, project, step string
}

var accountingNames = []string{"since", "by", "slot", "group", "user", "project", "step"}

func (a *accountingFlags) register(f *pflag.FlagSet) {
	f.StringVar(&a.since, "since", "30d", "accounting: how far back, a duration or whole days (30d)")
	f.StringVar(&a.by, "by", "user", "accounting: sum per user, project, domain or group")
	f.StringVar(&a.slot, "slot", "", "accounting: only this slot, such as cuda.device")
	f.StringVar(&a.group, "group", "", "accounting: only this resource group")
	f.StringVar(&a.user, "user", "", "accounting: only this user (users: only themselves)")
	f.StringVar(&a.project, "project", "", "accounting: only this project")
	f.StringVar(&a.step, "step", "", "accounting: one row per step, whole hours or days (1h, 1d); default: one for the range")
}

// wanted reports whether any accounting flag was given.
func (a *accountingFlags) wanted(f *pflag.FlagSet) bool {
	for _, n := range accountingNames {
		if f.Changed(n) {
			return true
		}
	}
	return false
}

func (a *accountingFlags) path() string {
	q := url.Values{}
	for k, v := range map[string]string{"since": a.since, "by": a.by, "slot": a.slot, "group": a.group, "user": a.user,
		"project": a.project, "step": a.step} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return "/v1/usage?" + q.Encode()
}

// runAccounting prints the usage history as a table or, with csv, as
// comma-separated values with a header.
func (a *accountingFlags) run(cmd *cobra.Command, o *output, csvOut bool) error {
	return call(cmd, o, "GET", a.path(), nil, func(w io.Writer, r v1.UsageReport) error {
		if csvOut {
			cw := csv.NewWriter(w)
			_ = cw.Write([]string{"at", r.By, "slot", "hours"})
			for _, p := range r.Items {
				_ = cw.Write([]string{p.At.UTC().Format("2006-01-02T15:04:05Z"), p.Key, p.Slot, strconv.FormatFloat(p.Hours, 'f', 4, 64)})
			}
			cw.Flush()
			return cw.Error()
		}
		fmt.Fprintf(w, "usage by %s since %s\n", r.By, r.Since.Local().Format("2006-01-02 15:04"))
		rows := make([][]string, len(r.Items))
		for i, p := range r.Items {
			rows[i] = []string{p.At.Local().Format("2006-01-02 15:04"), p.Key, p.Slot, strconv.FormatFloat(p.Hours, 'f', 2, 64)}
		}
		return table(w, []string{"FROM", "KEY", "SLOT", "SLOT-HOURS"}, rows)
	})
}
