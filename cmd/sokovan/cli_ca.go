package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// newCACmd is `sokovan ca`: the cluster CA that agents' identities rest
// on, and its rotation without downtime.
func newCACmd() *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:               "ca",
		Short:             "Show and rotate the cluster CA (admin)",
		PersistentPreRunE: func(*cobra.Command, []string) error { return o.check() },
	}
	o.register(cmd)
	var caOut string
	show := &cobra.Command{
		Use:   "show",
		Short: "The cluster CA, and the agents a rotation still waits for",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(cmd, &o, "GET", "/v1/cluster-ca", nil, caRender(caOut))
		},
	}
	var finish bool
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Start rotating the cluster CA; with --finish, drop the old one",
		Long: "sokovan ca rotate makes a new cluster CA, trusted beside the old one: agents renew their certificates\n" +
			"under it at their next heartbeat and are given both CAs to trust. Once `sokovan ca show` lists no stale\n" +
			"agent, `sokovan ca rotate --finish` drops the old CA (refused, naming them, while an agent still holds only\n" +
			"a certificate of it) and managers take certificates of the new one. Give users and new agents the file\n" +
			"--ca-out writes: during the rotation it holds both CAs.",
		Example: "  sokovan ca rotate --ca-out cluster-ca.pem\n  sokovan ca show\n  sokovan ca rotate --finish --ca-out cluster-ca.pem",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := "/v1/cluster-ca/rotate"
			if finish {
				path = "/v1/cluster-ca/finish"
			}
			return call(cmd, &o, "POST", path, struct{}{}, caRender(caOut))
		},
	}
	rotate.Flags().BoolVar(&finish, "finish", false, "finish the rotation: drop the old CA")
	for _, c := range []*cobra.Command{show, rotate} {
		c.Flags().StringVar(&caOut, "ca-out", "", "write every CA trusted now here (PEM), for --ca files")
	}
	cmd.AddCommand(show, rotate)
	return cmd
}

func caRender(caOut string) func(io.Writer, v1.ClusterCA) error {
	return func(w io.Writer, ca v1.ClusterCA) error {
		fmt.Fprintf(w, "ca:        %s\n", ca.Fingerprint)
		if ca.Rotating {
			fmt.Fprintf(w, "rotating:  from %s\n", ca.Previous)
			stale := "none (ready to finish)"
			if len(ca.StaleAgents) > 0 {
				stale = strings.Join(ca.StaleAgents, ", ")
			}
			fmt.Fprintf(w, "stale:     %s\n", stale)
		}
		if caOut != "" {
			if err := writeFileAtomic(caOut, []byte(ca.Certificates), 0o644); err != nil {
				return fmt.Errorf("--ca-out: %w", err)
			}
		}
		return nil
	}
}
