package v1

// Device is one accelerator of an agent (issue 19) and who holds it.
type Device struct {
	// ID is the GPU's UUID, or "cuda:N" for declared fake devices.
	ID    string `json:"id"`
	Index int    `json:"index"`
	// Slot is the slot type it counts toward: cuda.device (handed out
	// whole) or cuda.shares (shared by fraction).
	Slot   string `json:"slot"`
	Model  string `json:"model,omitempty"`
	Memory int64  `json:"memory,omitempty"` // bytes
	// Free is the share nobody holds: "1" for a free device, "0" for one
	// held whole, "0.25" for a shared one three quarters taken.
	Free string `json:"free"`
	// Holders are the live kernels holding part or all of it. Kernel and
	// session ids are shown to admins only.
	Holders []DeviceHolder `json:"holders"`
}

// DeviceHolder is one kernel's hold on a device.
type DeviceHolder struct {
	Kernel  string `json:"kernel,omitempty"`
	Session string `json:"session,omitempty"`
	Share   string `json:"share"`
	Memory  int64  `json:"memory,omitempty"` // bytes it may use
}

// DeviceGrant is a device, or a share of one, a kernel holds.
type DeviceGrant struct {
	Device string `json:"device"`
	Index  int    `json:"index"`
	Slot   string `json:"slot"`
	// Share is the fraction of the device: "1" for a whole one.
	Share  string `json:"share"`
	Memory int64  `json:"memory,omitempty"` // bytes it may use
}
