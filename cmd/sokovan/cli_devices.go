package main

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
)

// newAgentShowCmd is `sokovan agent show ID`: the agent's row and, when it
// hands out devices, one line per device with who holds it.
func newAgentShowCmd(o *output) *cobra.Command {
	return &cobra.Command{
		Use:               "show ID",
		Short:             "Show an agent and who holds each of its devices",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeFrom(listAgentIDs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, o, "GET", "/v1/agents/"+url.PathEscape(args[0]), nil, func(w io.Writer, a v1.Agent) error {
				if err := agentTable(w, []v1.Agent{a}); err != nil {
					return err
				}
				if len(a.Devices) == 0 {
					return nil
				}
				fmt.Fprintln(w)
				return deviceTable(w, a.Devices)
			})
		},
	}
}

// deviceTable lists an agent's devices, one a row, with their holders.
func deviceTable(w io.Writer, devs []v1.Device) error {
	rows := make([][]string, len(devs))
	for i, d := range devs {
		var held []string
		for _, h := range d.Holders {
			who := h.Kernel
			if who == "" {
				who = "a kernel"
			}
			if h.Share != "1" {
				who += " (" + h.Share + ")"
			}
			held = append(held, who)
		}
		mem := "-"
		if d.Memory > 0 {
			mem = domain.FormatQuantity(domain.KindBytes, domain.Quantity(d.Memory))
		}
		rows[i] = []string{d.ID, strconv.Itoa(d.Index), d.Slot, orDash(d.Model), mem, d.Free, orDash(strings.Join(held, ", "))}
	}
	return table(w, []string{"DEVICE", "INDEX", "SLOT", "MODEL", "MEMORY", "FREE", "HELD BY"}, rows)
}

// deviceSummary is the DEVICES column of agent ls: whole devices free of
// all, "-" for an agent that hands out none.
func deviceSummary(a v1.Agent) string {
	if len(a.Devices) == 0 {
		return "-"
	}
	free := 0
	for _, d := range a.Devices {
		if d.Free == "1" {
			free++
		}
	}
	return fmt.Sprintf("%d/%d free", free, len(a.Devices))
}

// kernelDevices is a kernel's grants for session show: device ids, with
// the share where it holds part of one.
func kernelDevices(k v1.Kernel) string {
	var out []string
	for _, g := range k.Devices {
		if g.Share == "1" {
			out = append(out, g.Device)
		} else {
			out = append(out, g.Device+" ("+g.Share+")")
		}
	}
	return orDash(strings.Join(out, ", "))
}

// anyKernelDevices reports whether a kernel of the list holds devices,
// which adds session show's DEVICES column.
func anyKernelDevices(ks []v1.Kernel) bool {
	for _, k := range ks {
		if len(k.Devices) > 0 {
			return true
		}
	}
	return false
}
