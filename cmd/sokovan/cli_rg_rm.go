package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// errNotConfirmed: rg rm was not confirmed, so nothing changed.
var errNotConfirmed = errors.New("not confirmed; nothing changed")

// newRGRmCmd is `sokovan rg rm NAME`, seed 003's Remove: the group goes
// DRAINING (PUT state DRAINING), which has no way back, and is removed
// (DELETE /v1/resource-groups/{name}) once it holds nothing. Because that
// door is one-way, it says what it will do and asks first.
func newRGRmCmd(o *output) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove", "delete"},
		Short:   "Drain a resource group and remove it once it is empty (admin)",
		Long: "Drains the group: from now on it refuses new sessions and cannot be made ACTIVE or STOPPED again, " +
			"while the sessions it holds run to their end. Once it holds no live session and no ALIVE or LOST " +
			"agent it is removed: gone from every listing, its ended sessions still naming it, and its name free " +
			"to be created again. A group that is not empty yet stays DRAINING; run rm again when it is. The " +
			"default group cannot be removed. Asks for confirmation, which --yes gives; without a terminal, " +
			"--yes is required.",
		Example:           "  sokovan rg rm gpu\n  sokovan rg rm gpu --yes",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listGroupNames),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			name := args[0]
			path := "/v1/resource-groups/" + url.PathEscape(name)
			var g v1.Group
			if _, err := c.do(ctx, "GET", path, nil, &g); err != nil {
				return err
			}
			if !yes {
				live, more, err := liveSessionsIn(cmd, c, name)
				if err != nil {
					return err
				}
				var agents v1.List[v1.Agent]
				if _, err := c.do(ctx, "GET", "/v1/agents?resource_group="+url.QueryEscape(name), nil, &agents); err != nil {
					return err
				}
				held := 0
				for _, a := range agents.Items {
					if a.Status == domain.AgentAlive.String() || a.Status == domain.AgentLost.String() {
						held++
					}
				}
				if err := confirmRemove(cmd, g, live, more, held); err != nil {
					return err
				}
			}
			removed, raw, err := removeGroup(cmd, c, path, g)
			if err != nil {
				return err
			}
			if o.json() {
				if removed.State != domain.GroupRemoved.String() {
					if raw, err = c.do(ctx, "GET", path, nil, nil); err != nil {
						return err
					}
				}
				return printJSON(cmd.OutOrStdout(), raw)
			}
			if removed.State == domain.GroupRemoved.String() {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "resource group %s REMOVED\n", removed.Name)
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "resource group %s DRAINING: %s\nrun `sokovan rg rm %s` again once it is empty\n",
				removed.Name, raw, removed.Name)
			return err
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "remove without asking")
	return cmd
}

// removeGroup deletes the group, draining it first when the manager says
// its state is in the way (field state), and returns the group as it is
// after: REMOVED, or DRAINING with raw the manager's reason it is not empty
// yet. A DELETE goes first because it is also the manager's refusal of
// the default group, which must not be drained.
func removeGroup(cmd *cobra.Command, c *client, path string, g v1.Group) (v1.Group, []byte, error) {
	ctx := cmd.Context()
	var out v1.Group
	raw, err := c.do(ctx, "DELETE", path, nil, &out)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict && ae.Body.Field == "state" &&
		g.State != domain.GroupDraining.String() {
		state := domain.GroupDraining.String()
		if _, err := c.do(ctx, "PUT", path, v1.GroupRequest{State: &state}, nil); err != nil {
			return v1.Group{}, nil, err
		}
		raw, err = c.do(ctx, "DELETE", path, nil, &out)
		ae = nil
	}
	if errors.As(err, &ae) && ae.Status == http.StatusConflict && ae.Body.Field == "" {
		// Still holding sessions or agents: drained, not removed yet.
		g.State = domain.GroupDraining.String()
		return g, []byte(ae.Body.Message), nil
	}
	return out, raw, err
}

// liveSessionsIn counts the group's sessions that have not ended, from
// one page of at most 10000; more says there were more than that.
func liveSessionsIn(cmd *cobra.Command, c *client, group string) (n int, more bool, err error) {
	var live []string
	for _, st := range domain.SessionStatuses() {
		if !st.Terminal() {
			live = append(live, st.String())
		}
	}
	var page v1.SessionPage
	q := url.Values{"resource_group": {group}, "status": {strings.Join(live, ",")}, "limit": {"10000"}}
	if _, err := c.do(cmd.Context(), "GET", "/v1/sessions?"+q.Encode(), nil, &page); err != nil {
		return 0, false, err
	}
	return len(page.Items), page.Next != "", nil
}

// confirmRemove says what removing g does and asks; without a terminal
// to ask on it refuses, since nobody could have read the question.
func confirmRemove(cmd *cobra.Command, g v1.Group, live int, more bool, agents int) error {
	w := cmd.ErrOrStderr()
	count := fmt.Sprint(live)
	if more {
		count = "more than " + count
	}
	if g.State != domain.GroupDraining.String() {
		fmt.Fprintf(w, "This drains resource group %s (now %s): it refuses new sessions from now on and can never be ACTIVE again.\n",
			g.Name, g.State)
	} else {
		fmt.Fprintf(w, "Resource group %s is DRAINING already.\n", g.Name)
	}
	fmt.Fprintf(w, "Its %s live sessions run to their end (queued ones are still scheduled); %d ALIVE or LOST agents stay in it until moved or stopped.\n",
		count, agents)
	fmt.Fprintf(w, "Once it holds neither it is removed, and its name can be created again.\n")
	in, ok := cmd.InOrStdin().(*os.File)
	if !ok || !isTTY(in) {
		return fmt.Errorf("%w: stdin is not a terminal to confirm on; pass --yes to remove %s", errNotConfirmed, g.Name)
	}
	fmt.Fprintf(w, "Remove resource group %s? [y/N] ", g.Name)
	answer, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return errNotConfirmed
	}
	return nil
}
