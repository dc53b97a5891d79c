package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func listJobRefs(ctx context.Context, c *client) ([]string, error) {
	var list v1.List[v1.Job]
	if _, err := c.do(ctx, "GET", "/v1/jobs", nil, &list); err != nil {
		return nil, err
	}
	out := make([]string, len(list.Items))
	for i, j := range list.Items {
		out[i] = j.ID + "\t" + j.Name + " " + j.State
	}
	return out, nil
}

func newJobCmd() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:     "job",
		Aliases: []string{"jobs"},
		Short:   "Create, list, show and cancel jobs: gangs of sessions that start together",
		Long: "A job groups sessions submitted one by one (`sokovan session create --job NAME ...`). Its members start\n" +
			"only once at least --min-available of them are placed together; members placed while the gang is short\n" +
			"wait SCHEDULED and are all released after --permit-timeout. Cancelling a job ends its members.",
		PersistentPreRunE: func(*cobra.Command, []string) error { return o.check() },
	}
	o.register(cmd)

	var minAvail int
	var permit, policy string
	create := &cobra.Command{
		Use:     "create NAME",
		Short:   "Create a job",
		Example: "  sokovan job create spark --min-available 3 --permit-timeout 2m --failure-policy fail",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := v1.CreateJobRequest{Name: args[0], PermitTimeout: permit, FailurePolicy: policy}
			body.MinAvailable = given(cmd.Flags(), "min-available", &minAvail)
			return call(cmd, &o, "POST", "/v1/jobs", body, func(w io.Writer, j v1.Job) error {
				fmt.Fprintf(w, "%s  %s  %s\n", j.ID, j.Name, j.State)
				return nil
			})
		},
	}
	create.Flags().IntVar(&minAvail, "min-available", 1, "members that must be placed together before any starts")
	create.Flags().StringVar(&permit, "permit-timeout", "", "how long placed members wait for the rest of the gang (default 60s)")
	create.Flags().StringVar(&policy, "failure-policy", "", "wait (default) or fail: what a failed member or a permit timeout does to the job")
	_ = create.RegisterFlagCompletionFunc("failure-policy", cobra.FixedCompletions([]string{"wait", "fail"}, cobra.ShellCompDirectiveNoFileComp))

	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List jobs",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(cmd, &o, "GET", "/v1/jobs", nil, func(w io.Writer, list v1.List[v1.Job]) error {
				rows := make([][]string, len(list.Items))
				for i, j := range list.Items {
					rows[i] = []string{j.ID, orDash(j.Name), j.State, strconv.Itoa(j.MinAvailable),
						strconv.Itoa(j.Submitted), strconv.Itoa(j.Placed), j.FailurePolicy, j.CreatedAt.Local().Format(time.DateTime)}
				}
				return table(w, []string{"ID", "NAME", "STATE", "MIN", "SUBMITTED", "PLACED", "POLICY", "CREATED"}, rows)
			})
		},
	}
	show := &cobra.Command{
		Use:               "show ID|NAME",
		Short:             "Show a job with its members and state history",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listJobRefs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, &o, "GET", "/v1/jobs/"+url.PathEscape(args[0]), nil, func(w io.Writer, j v1.Job) error {
				printJob(w, j)
				return nil
			})
		},
	}
	rm := &cobra.Command{
		Use:               "rm ID|NAME",
		Aliases:           []string{"cancel"},
		Short:             "Cancel a job: it fails and every live member is ended",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listJobRefs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, &o, "DELETE", "/v1/jobs/"+url.PathEscape(args[0]), nil, func(w io.Writer, j v1.Job) error {
				fmt.Fprintf(w, "job %s %s: %s\n", j.ID, j.State, j.StateReason)
				return nil
			})
		},
	}
	cmd.AddCommand(create, ls, show, rm)
	return cmd
}

func printJob(w io.Writer, j v1.Job) {
	fmt.Fprintf(w, "id:              %s\nname:            %s\nowner:           %s\n", j.ID, orDash(j.Name), j.Owner)
	fmt.Fprintf(w, "state:           %s  %s\n", j.State, j.StateReason)
	fmt.Fprintf(w, "min available:   %d (submitted %d, placed %d)\n", j.MinAvailable, j.Submitted, j.Placed)
	fmt.Fprintf(w, "permit timeout:  %s\nfailure policy:  %s\n", j.PermitTimeout, j.FailurePolicy)
	fmt.Fprintln(w, "members:")
	for _, m := range j.Members {
		fmt.Fprintf(w, "  %s  %-12s %s\n", m.ID, m.Status, m.Name)
	}
	fmt.Fprintln(w, "history:")
	for _, h := range j.History {
		fmt.Fprintf(w, "  %s  %-8s %s → %s  %s\n", h.At.Local().Format(time.DateTime), h.Event, h.From, h.To, h.Message)
	}
}
