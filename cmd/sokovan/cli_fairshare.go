package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// fairShareFlags are `rg set`'s fair-share flags; only those given are
// sent.
type fairShareFlags struct {
	halfLife string
	shares   []string
}

func (p *fairShareFlags) register(f *pflag.FlagSet) {
	f.StringVar(&p.halfLife, "half-life", "", "fairshare: past use counts half as much after this long, such as 168h (0s: the default, 168h)")
	f.StringArrayVar(&p.shares, "share", nil, "fairshare: user:NAME=N or project:NAME=N shares (default 1; 0 removes; repeatable)")
}

// request is the fair-share part of a group change; nil when no flag of
// it was given. A malformed share is an error before anything is sent.
func (p *fairShareFlags) request(f *pflag.FlagSet) (*v1.FairShareRequest, error) {
	var r v1.FairShareRequest
	set := false
	if f.Changed("half-life") {
		r.HalfLife, set = &p.halfLife, true
	}
	for _, s := range p.shares {
		k, v, ok := strings.Cut(s, "=")
		n, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || (!strings.HasPrefix(k, "user:") && !strings.HasPrefix(k, "project:")) {
			return nil, fmt.Errorf("--share %q: want user:NAME=N or project:NAME=N", s)
		}
		if r.Shares == nil {
			r.Shares = map[string]float64{}
		}
		r.Shares[k], set = n, true
	}
	if !set {
		return nil, nil
	}
	return &r, nil
}

func printFairShare(w io.Writer, g v1.Group) {
	if g.Sequencer != "fairshare" && len(g.FairShare.Shares) == 0 {
		return
	}
	shares := "all 1"
	if len(g.FairShare.Shares) > 0 {
		var parts []string
		for _, k := range slices.Sorted(mapKeys(g.FairShare.Shares)) {
			parts = append(parts, fmt.Sprintf("%s=%g", k, g.FairShare.Shares[k]))
		}
		shares = strings.Join(parts, ", ") + " (others 1)"
	}
	fmt.Fprintf(w, "Fair share:    half-life %s; shares %s\n", g.FairShare.HalfLife, shares)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// fairShareLine is a session's fair-share standing on one line.
func fairShareLine(f *v1.FairShareFactor) string {
	used := "no use"
	if f.UsageSlot != "" {
		used = fmt.Sprintf("U %.3f of the group's %s", f.Usage, f.UsageSlot)
	}
	return fmt.Sprintf("fair share: %s/%s factor %.3f = 2^(-U/S); %s; S %.3f; half-life %s",
		f.Project, f.User, f.Factor, used, f.Shares, f.HalfLife)
}

// factorCell is a queue row's fair share: F (U/S).
func factorCell(f *v1.FairShareFactor) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f (U %.2f / S %.2f)", f.Factor, f.Usage, f.Shares)
}
