package main

import (
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// newRGRmCmd is `sokovan rg rm NAME`: DELETE /v1/resource-groups/{name}.
func newRGRmCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove a drained, empty resource group (admin)",
		Long: "Only a DRAINING group with no live session and no ALIVE or LOST agent can be removed; the " +
			"manager says what is in the way otherwise. The group then disappears from every listing, " +
			"refuses sessions and agents, and its name is not reused; its ended sessions keep naming it.",
		Example:           "  sokovan rg set gpu --state DRAINING\n  sokovan rg rm gpu",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listGroupNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "DELETE", "/v1/resource-groups/"+url.PathEscape(args[0]), nil, func(w io.Writer, g v1.Group) error {
				_, err := fmt.Fprintf(w, "resource group %s %s\n", g.Name, g.State)
				return err
			})
		},
	}
}
