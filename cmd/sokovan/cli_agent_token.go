package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

func newAgentTokenCmd(o *output) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "token",
		Aliases: []string{"tokens"},
		Short:   "Join tokens that let agents into the cluster (admin)",
		Long: "An agent joins with a join token once (sokovan agent run --join-token): it sends a certificate request\n" +
			"and receives a certificate of the cluster CA naming its id, which it presents from then on. The token is\n" +
			"shown once, when created; the manager keeps only its hash.",
	}
	var ttl, caOut string
	var uses int
	create := &cobra.Command{
		Use:     "create",
		Short:   "Create a join token; it is printed this once",
		Example: "  sokovan agent token create --ttl 1h --uses 3",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if uses < 0 {
				return fmt.Errorf("--uses: must be 0 (any number) or more, not %d", uses)
			}
			body := v1.CreateAgentTokenRequest{TTL: ttl, Uses: uses}
			return call(cmd, o, "POST", "/v1/agent-tokens", body, func(w io.Writer, t v1.AgentToken) error {
				fmt.Fprintf(w, "id:       %s\ntoken:    %s\nexpires:  %s\n", t.ID, t.Token, when(&t.ExpiresAt))
				if caOut != "" {
					if t.CA == "" {
						return errors.New("--ca-out: the manager gives agents no identities (it runs --insecure-shared-agent-token)")
					}
					if err := writeFileAtomic(caOut, []byte(t.CA), 0o644); err != nil {
						return fmt.Errorf("--ca-out: %w", err)
					}
				}
				// On stderr, so that stdout is only what a script keeps.
				fmt.Fprintln(cmd.ErrOrStderr(), "Keep the token now: it is not shown again. Start agents with "+
					"`sokovan agent run --join-token TOKEN --ca CLUSTER-CA.pem …`.")
				return nil
			})
		},
	}
	create.Flags().StringVar(&ttl, "ttl", "1h", "how long agents may join with it (at most 720h)")
	create.Flags().StringVar(&caOut, "ca-out", "", "write the cluster CA's certificate here, for agents' --ca")
	create.Flags().IntVar(&uses, "uses", 0, "how many agents may join with it (0: any number until it expires)")
	cmd.AddCommand(create)
	return cmd
}
