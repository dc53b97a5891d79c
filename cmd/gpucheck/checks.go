package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	v1 "github.com/sokovan-go/sokovan/internal/api/v1"
)

// runChecks runs every check in turn; a failed check is reported and the
// rest still run where they can.
func (c *checker) runChecks(ctx context.Context) {
	a, err := c.startAgent(ctx, "gpu-a", c.devices("auto"))
	if !c.result("agent with --devices auto", err, "ALIVE") {
		return
	}
	c.result("discovery", c.matchDiscovery(a, "cuda.device"), fmt.Sprintf("%d device(s) as nvidia-smi lists them", len(c.gpus)))
	c.checkOneGPU(ctx)
	c.checkNoGPU(ctx)
	c.checkTwo(ctx)
	c.agents["gpu-a"].stop()
	c.checkShares(ctx)
}

// matchDiscovery holds the agent's devices to nvidia-smi's view.
func (c *checker) matchDiscovery(a v1.Agent, slot string) error {
	if len(a.Devices) != len(c.gpus) {
		return fmt.Errorf("agent lists %d devices, nvidia-smi %d", len(a.Devices), len(c.gpus))
	}
	for i, g := range c.gpus {
		d := a.Devices[i]
		var errs []error
		if d.ID != g.UUID || d.Index != g.Index {
			errs = append(errs, fmt.Errorf("device %d is %s at index %d, nvidia-smi says %s at %d", i, d.ID, d.Index, g.UUID, g.Index))
		}
		if d.Model != g.Name {
			errs = append(errs, fmt.Errorf("%s model %q, nvidia-smi %q", g.UUID, d.Model, g.Name))
		}
		if d.Memory>>20 != g.MemMiB {
			errs = append(errs, fmt.Errorf("%s memory %d MiB, nvidia-smi %d MiB", g.UUID, d.Memory>>20, g.MemMiB))
		}
		if d.Slot != slot {
			errs = append(errs, fmt.Errorf("%s counts toward %s, want %s", g.UUID, d.Slot, slot))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	want := strconv.Itoa(len(c.gpus))
	if slot == "cuda.device" && a.AvailableSlots[slot] != want {
		return fmt.Errorf("agent offers cuda.device %q, want %s", a.AvailableSlots[slot], want)
	}
	return nil
}

// seesOnly checks a probe saw exactly its grants, through CUDA, the
// environment and nvidia-smi.
func seesOnly(r report, g v1.DeviceGrant) error {
	var errs []error
	if r.CUDAError != "" {
		errs = append(errs, fmt.Errorf("CUDA: %s", r.CUDAError))
	}
	if got := uuids(r.CUDA); len(got) != 1 || got[0] != g.Device {
		errs = append(errs, fmt.Errorf("CUDA enumerates %v, granted %s", got, g.Device))
	}
	if v := r.Env["CUDA_VISIBLE_DEVICES"]; v != g.Device {
		errs = append(errs, fmt.Errorf("CUDA_VISIBLE_DEVICES=%q, granted %s", v, g.Device))
	}
	if v := r.Env["SOKOVAN_DEVICE_MEM"]; v != strconv.FormatInt(g.Memory, 10) {
		errs = append(errs, fmt.Errorf("SOKOVAN_DEVICE_MEM=%q, granted %d bytes", v, g.Memory))
	}
	if r.SMIError != "" {
		errs = append(errs, fmt.Errorf("nvidia-smi -L: %s", r.SMIError))
	} else if err := smiLists(r.SMI, g.Device); err != nil {
		// The process runtime cannot hide other GPUs' device nodes from
		// nvidia-smi, which reads NVML and ignores CUDA_VISIBLE_DEVICES;
		// on a one-GPU machine this holds trivially, on a larger one it
		// fails and says so.
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// onGPU checks nvidia-smi lists the probe's process on its device.
func (c *checker) onGPU(ctx context.Context, r report, uuid string) (string, error) {
	if r.UseError != "" || r.Used != uuid {
		return "", fmt.Errorf("probe used %q (%s), granted %s", r.Used, r.UseError, uuid)
	}
	var got app
	err := poll(ctx, 10*time.Second, func() (bool, error) {
		apps, err := c.computeApps()
		if err != nil {
			return false, err
		}
		var ok bool
		got, ok = apps[r.PID]
		return ok, nil
	})
	if err != nil {
		apps, _ := c.computeApps()
		return "", fmt.Errorf("nvidia-smi does not list the kernel's pid %d as a compute process (it lists %v): %w", r.PID, apps, err)
	}
	if got.UUID != uuid || got.MiB < probeBytes>>20 {
		return "", fmt.Errorf("nvidia-smi lists pid %d on %s with %d MiB, want %s with at least %d MiB", r.PID, got.UUID, got.MiB, uuid, probeBytes>>20)
	}
	return fmt.Sprintf("pid %d holds %d MiB on %s and read back what the GPU wrote", r.PID, got.MiB, uuid), nil
}

// freed checks a session ended well and left its device free.
func (c *checker) freed(ctx context.Context, id, agent, uuid string, pids ...int) error {
	s, err := c.waitEnded(ctx, id)
	if err != nil {
		return err
	}
	if s.Status != "TERMINATED" || s.Outcome != "success" {
		return fmt.Errorf("session ended %s, outcome %q (%s)", s.Status, s.Outcome, s.StatusReason)
	}
	if err := c.waitFree(ctx, agent, uuid); err != nil {
		return err
	}
	for _, pid := range pids {
		if err := c.waitGone(ctx, pid); err != nil {
			return fmt.Errorf("pid %d still on the GPU: %w", pid, err)
		}
	}
	return nil
}

func (c *checker) checkOneGPU(ctx context.Context) {
	id, err := c.submit(ctx, "one-gpu", "gpu-a", map[string]string{"cuda.device": "1"}, c.hold)
	var r report
	var s v1.Session
	if err == nil {
		r, s, err = c.report(ctx, id)
	}
	var g v1.DeviceGrant
	if err == nil {
		g, err = grant(s)
	}
	if !c.result("one GPU: session starts with a grant", err, fmt.Sprintf("granted %s (index %d)", g.Device, g.Index)) {
		return
	}
	c.result("one GPU: kernel sees only its device", seesOnly(r, g),
		fmt.Sprintf("CUDA, CUDA_VISIBLE_DEVICES and nvidia-smi -L all name %s only; SOKOVAN_DEVICE_MEM=%s", g.Device, r.Env["SOKOVAN_DEVICE_MEM"]))
	detail, err := c.onGPU(ctx, r, g.Device)
	c.result("one GPU: kernel runs on the GPU", err, detail)
	c.result("one GPU: device free after the session ends", c.freed(ctx, id, "gpu-a", g.Device, r.PID),
		fmt.Sprintf("TERMINATED success; free \"1\" with no holders, pid %d gone from nvidia-smi", r.PID))
}

func (c *checker) checkNoGPU(ctx context.Context) {
	id, err := c.submit(ctx, "no-gpu", "gpu-a", nil, c.hold)
	var r report
	if err == nil {
		r, _, err = c.report(ctx, id)
	}
	if err == nil {
		v, set := r.Env["CUDA_VISIBLE_DEVICES"]
		switch {
		case r.CUDAError != "":
			err = fmt.Errorf("CUDA: %s", r.CUDAError)
		case len(r.CUDA) != 0:
			err = fmt.Errorf("a session that asked for no GPU enumerates %v", uuids(r.CUDA))
		case !set || v != "":
			err = fmt.Errorf("CUDA_VISIBLE_DEVICES=%q (set %v), want set and empty", v, set)
		}
	}
	c.result("no GPU asked: kernel sees none", err, "CUDA_VISIBLE_DEVICES is empty and CUDA enumerates no device")
	if err == nil {
		_, err = c.waitEnded(ctx, id)
	}
}

// checkTwo runs two one-GPU sessions at once: on different devices where
// there are two, else the second waits with a device blocker until the
// first ends, and then gets the device.
func (c *checker) checkTwo(ctx context.Context) {
	if len(c.gpus) >= 2 {
		c.checkTwoApart(ctx)
		return
	}
	first, err := c.submit(ctx, "holder", "gpu-a", map[string]string{"cuda.device": "1"}, 10*time.Minute)
	var fs v1.Session
	if err == nil {
		_, fs, err = c.report(ctx, first)
	}
	if !c.result("one GPU machine: first of two sessions runs", err, "RUNNING with the GPU") {
		return
	}
	second, err := c.submit(ctx, "waiter", "gpu-a", map[string]string{"cuda.device": "1"}, c.hold)
	var why v1.Why
	if err == nil {
		// Long enough for several scheduling rounds to have passed it over.
		time.Sleep(3 * time.Second)
		_, err = c.api(ctx, "GET", "/v1/sessions/"+second+"/why", nil, &why)
	}
	var blocker string
	if err == nil {
		for _, b := range why.Blockers {
			if b.Slot == "cuda.device" {
				blocker = fmt.Sprintf("%s %s: requested %s, available %s", b.Kind, b.Scope, b.Requested, b.Available)
			}
		}
		switch {
		case why.Status != "PENDING":
			err = fmt.Errorf("second session is %s while the only GPU is held", why.Status)
		case blocker == "":
			err = fmt.Errorf("second session waits without a cuda.device blocker: %+v", why.Blockers)
		}
	}
	c.result("one GPU machine: second session waits with a device blocker", err, blocker)
	if _, derr := c.api(ctx, "DELETE", "/v1/sessions/"+first, nil, nil); derr != nil {
		c.result("one GPU machine: first session terminated", derr, "")
		return
	}
	var r report
	var s v1.Session
	if err == nil {
		r, s, err = c.report(ctx, second)
	}
	var g v1.DeviceGrant
	if err == nil {
		g, err = grant(s)
	}
	if err == nil {
		err = seesOnly(r, g)
	}
	fg, _ := grant(fs)
	if err == nil && g.Device != fg.Device {
		err = fmt.Errorf("second session got %s, the machine's only GPU is %s", g.Device, fg.Device)
	}
	c.result("one GPU machine: second session gets the GPU once the first ends", err, "sees "+g.Device)
	if err == nil {
		c.result("one GPU machine: device free after both", c.freed(ctx, second, "gpu-a", g.Device, r.PID), "free again")
	}
}

func (c *checker) checkTwoApart(ctx context.Context) {
	var ids []string
	var rs []report
	var gs []v1.DeviceGrant
	var err error
	for _, n := range []string{"apart-1", "apart-2"} {
		var id string
		if id, err = c.submit(ctx, n, "gpu-a", map[string]string{"cuda.device": "1"}, 2*c.hold); err != nil {
			break
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		if err != nil {
			break
		}
		var r report
		var s v1.Session
		if r, s, err = c.report(ctx, id); err != nil {
			break
		}
		var g v1.DeviceGrant
		if g, err = grant(s); err == nil {
			err = seesOnly(r, g)
		}
		rs, gs = append(rs, r), append(gs, g)
	}
	if err == nil && gs[0].Device == gs[1].Device {
		err = fmt.Errorf("both sessions were granted %s", gs[0].Device)
	}
	if c.result("two GPUs: two sessions see different devices", err, fmt.Sprintf("%v", gs)) {
		for i, id := range ids {
			c.result("two GPUs: device free after "+id, c.freed(ctx, id, "gpu-a", gs[i].Device, rs[i].PID), "free again")
		}
	}
}

// checkShares runs an agent that shares its GPUs by fraction and two
// half-GPU sessions on it.
func (c *checker) checkShares(ctx context.Context) {
	a, err := c.startAgent(ctx, "gpu-s", c.devices("nvml:cuda.shares"))
	if err == nil {
		err = c.matchDiscovery(a, "cuda.shares")
	}
	if !c.result("shares: agent with --devices nvml:cuda.shares", err, "lists the same devices, slot cuda.shares") {
		return
	}
	var ids []string
	for _, n := range []string{"half-1", "half-2"} {
		id, err := c.submit(ctx, n, "gpu-s", map[string]string{"cuda.shares": "0.5"}, 2*c.hold)
		if !c.result("shares: submit "+n, err, "accepted") {
			return
		}
		ids = append(ids, id)
	}
	var rs []report
	var gs []v1.DeviceGrant
	var notes []string
	for _, id := range ids {
		r, s, err := c.report(ctx, id)
		var g v1.DeviceGrant
		if err == nil {
			g, err = grant(s)
		}
		if err == nil {
			err = c.shareOf(ctx, r, g)
		}
		if !c.result("shares: kernel sees its device and memory share", err,
			fmt.Sprintf("%s share %s, SOKOVAN_DEVICE_MEM=%s", g.Device, g.Share, r.Env["SOKOVAN_DEVICE_MEM"])) {
			return
		}
		rs, gs = append(rs, r), append(gs, g)
	}
	var err2 error
	if len(c.gpus) == 1 && gs[0].Device != gs[1].Device {
		err2 = fmt.Errorf("two halves of a one-GPU machine went to %s and %s", gs[0].Device, gs[1].Device)
	}
	for i, r := range rs {
		d, err := c.onGPU(ctx, r, gs[i].Device)
		if err != nil {
			err2 = errors.Join(err2, err)
		}
		notes = append(notes, d)
	}
	c.result("shares: both halves run on the GPU at once", err2, strings.Join(notes, "; "))
	for i, id := range ids {
		c.result("shares: device free after "+gs[i].Share+" share ends", c.freed(ctx, id, "gpu-s", gs[i].Device, rs[i].PID), "free again")
	}
}

// shareOf checks a fractional grant: CUDA sees the device, and the
// environment carries the share's memory.
func (c *checker) shareOf(ctx context.Context, r report, g v1.DeviceGrant) error {
	if g.Share != "0.5" {
		return fmt.Errorf("granted share %q, asked 0.5", g.Share)
	}
	d, err := c.agentDevice(ctx, "gpu-s", g.Device)
	if err != nil {
		return err
	}
	var errs []error
	if half := d.Memory / 2; g.Memory < half-1 || g.Memory > half+1 {
		errs = append(errs, fmt.Errorf("granted %d bytes of device memory, half of %d is %d", g.Memory, d.Memory, half))
	}
	if got := uuids(r.CUDA); len(got) != 1 || got[0] != g.Device {
		errs = append(errs, fmt.Errorf("CUDA enumerates %v (%s), granted %s", got, r.CUDAError, g.Device))
	}
	if v := r.Env["SOKOVAN_DEVICE_MEM"]; v != strconv.FormatInt(g.Memory, 10) {
		errs = append(errs, fmt.Errorf("SOKOVAN_DEVICE_MEM=%q, granted %d bytes", v, g.Memory))
	}
	return errors.Join(errs...)
}

// devices is the agent's --devices: spec, unless GPUCHECK_FAKE_DEVICES
// is set, for a dry run of the checker itself on a machine without a GPU
// (with a stand-in nvidia-smi first on PATH): the agents then declare one
// fake device, and the checks that need CUDA fail, as they should.
func (c *checker) devices(spec string) string {
	if os.Getenv("GPUCHECK_FAKE_DEVICES") == "" {
		return spec
	}
	if spec == "nvml:cuda.shares" {
		return "cuda.shares:1"
	}
	return "cuda:1"
}
