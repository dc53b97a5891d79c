package main

import (
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func newQueueCmd() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:   "queue [GROUP]",
		Short: "Show a resource group's PENDING sessions in the order the scheduler tries them",
		Long: "Runs a dry scheduling round and lists the group's PENDING sessions in the order its sequencer\n" +
			"tries them (higher priority first), with what the round would do: start now, wait (and why), or\n" +
			"never. You see your own sessions with their places in the whole queue; others' are only counted.",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFrom(listGroupNames),
		PreRunE:           func(*cobra.Command, []string) error { return o.check() },
		RunE: func(cmd *cobra.Command, args []string) error {
			group := "default"
			if len(args) == 1 {
				group = args[0]
			}
			return call(cmd, &o, "GET", "/v1/resource-groups/"+url.PathEscape(group)+"/queue", nil,
				func(w io.Writer, q v1.Queue) error {
					fmt.Fprintf(w, "resource group %s (%s): %d pending", q.ResourceGroup, q.Sequencer, q.Pending)
					if q.Hidden > 0 {
						fmt.Fprintf(w, ", %d of them other users'", q.Hidden)
					}
					fmt.Fprintln(w)
					if len(q.Items) == 0 {
						return nil
					}
					rows := make([][]string, len(q.Items))
					for i, e := range q.Items {
						why := "-"
						if len(e.Blockers) > 0 {
							why = e.Blockers[0].Message
							if n := len(e.Blockers); n > 1 {
								why += fmt.Sprintf(" (+%d more: sokovan session why %s)", n-1, shortID(e.ID))
							}
						}
						rows[i] = []string{strconv.Itoa(e.Position), shortID(e.ID), orDash(e.Name), e.Owner,
							strconv.Itoa(e.Priority), slotList(e.RequestedSlots), strconv.Itoa(e.ClusterSize), e.Outcome, why}
						if q.Sequencer == "fairshare" {
							rows[i] = slices.Insert(rows[i], 5, factorCell(e.FairShare))
						}
					}
					header := []string{"#", "ID", "NAME", "OWNER", "PRIO", "PER KERNEL", "KERNELS", "NEXT ROUND", "BLOCKED BY"}
					if q.Sequencer == "fairshare" {
						header = slices.Insert(header, 5, "FAIR SHARE")
					}
					return table(w, header, rows)
				})
		},
	}
	o.register(cmd)
	return cmd
}

func newUsageCmd() *cobra.Command {
	var o output
	var acct accountingFlags
	csvOut := false
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Show what your sessions hold and ask for, against your quotas; or, with --since/--by/…, past use",
		Long: "Without accounting flags: what your sessions hold and ask for now, against your quotas.\n" +
			"With any of --since, --by, --slot, --group, --user, --project, --step: slot-hours used over time\n" +
			"(cpu-hours, GiB-hours, device-hours) from the hourly history; -o csv writes CSV. Admins see everyone,\n" +
			"users themselves.",
		Example: "  sokovan usage --since 30d --by project --slot cuda.device -o csv",
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if o.format == "csv" {
				if !acct.wanted(cmd.Flags()) {
					return fmt.Errorf("-o csv is for the accounting report: add --since or --by")
				}
				csvOut, o.format = true, "table"
			}
			return o.check()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if acct.wanted(cmd.Flags()) {
				return acct.run(cmd, &o, csvOut)
			}
			return call(cmd, &o, "GET", "/v1/me/usage", nil, func(w io.Writer, u v1.Usage) error {
				fmt.Fprintf(w, "%s: %d session(s) holding %s; %d pending asking for %s\n", u.User,
					u.RunningSessions, slotList(u.Occupied), u.PendingSessions, slotList(u.Pending))
				if len(u.Limits) == 0 {
					fmt.Fprintln(w, "no policy limits you")
					return nil
				}
				fmt.Fprintln(w)
				var rows [][]string
				for _, l := range u.Limits {
					scope := l.Scope + ":" + l.Name
					slots := make([]string, 0, len(l.MaxSlots))
					for slot := range l.MaxSlots {
						slots = append(slots, slot)
					}
					slices.Sort(slots)
					for _, slot := range slots {
						rows = append(rows, []string{scope, slot, l.Used[slot], l.MaxSlots[slot]})
					}
					if l.MaxConcurrentSessions > 0 {
						rows = append(rows, []string{scope, "running sessions", strconv.Itoa(l.ConcurrentSessions),
							strconv.Itoa(l.MaxConcurrentSessions)})
					}
					if l.MaxPendingSessions > 0 {
						rows = append(rows, []string{scope, "pending sessions", strconv.Itoa(l.PendingSessions),
							strconv.Itoa(l.MaxPendingSessions)})
					}
				}
				if len(rows) == 0 {
					fmt.Fprintln(w, "your policies set no limits")
					return nil
				}
				return table(w, []string{"POLICY", "LIMIT", "USED", "MAX"}, rows)
			})
		},
	}
	o.register(cmd)
	acct.register(cmd.Flags())
	return cmd
}
