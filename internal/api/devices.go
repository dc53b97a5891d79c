package api

import (
	"net/http"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// holdingKernels are the kernel statuses whose grants hold devices.
var holdingKernels = domain.HoldingKernelStatuses()

// addDevices fills in the devices of the agents that report any, with
// who holds each: one kernel listing for all of them, by agent.
func (s *Server) addDevices(r *http.Request, agents []domain.Agent, out []v1.Agent) error {
	var ids []domain.AgentID
	for _, a := range agents {
		if len(a.Devices) > 0 {
			ids = append(ids, a.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	kernels, err := s.store.ListKernels(r.Context(), store.KernelFilter{Agents: ids, Statuses: holdingKernels})
	if err != nil {
		return err
	}
	type hold struct {
		k domain.Kernel
		g domain.DeviceGrant
	}
	holds := map[domain.AgentID]map[string][]hold{}
	for _, k := range kernels {
		for _, g := range k.Devices {
			if holds[k.Agent] == nil {
				holds[k.Agent] = map[string][]hold{}
			}
			holds[k.Agent][g.Device] = append(holds[k.Agent][g.Device], hold{k, g})
		}
	}
	admin := isAdmin(caller(r.Context()))
	for i, a := range agents {
		for _, d := range a.Devices {
			free := domain.WholeShare
			dev := v1.Device{ID: d.ID, Index: d.Index, Slot: d.Slot, Model: d.Model, Memory: d.Memory,
				Holders: []v1.DeviceHolder{}}
			for _, h := range holds[a.ID][d.ID] {
				free -= h.g.Share
				dh := v1.DeviceHolder{Share: domain.FormatQuantity(domain.KindShares, h.g.Share), Memory: h.g.Memory}
				if admin {
					dh.Kernel, dh.Session = string(h.k.ID), string(h.k.SessionID)
				}
				dev.Holders = append(dev.Holders, dh)
			}
			dev.Free = domain.FormatQuantity(domain.KindShares, max(free, 0))
			out[i].Devices = append(out[i].Devices, dev)
		}
	}
	return nil
}

// grantsOut writes a kernel's device grants for the API.
func grantsOut(gs []domain.DeviceGrant) []v1.DeviceGrant {
	if len(gs) == 0 {
		return nil
	}
	out := make([]v1.DeviceGrant, len(gs))
	for i, g := range gs {
		out[i] = v1.DeviceGrant{Device: g.Device, Index: g.Index, Slot: g.Slot,
			Share: domain.FormatQuantity(domain.KindShares, g.Share), Memory: g.Memory}
	}
	return out
}
