//go:build cgo && linux

package devices

// The few NVML calls discovery needs, bound here through dlopen rather than
// github.com/NVIDIA/go-nvml: that package's cgo stubs call NVML functions
// the header marks deprecated, so a fresh build printed 29 compiler
// warnings, and it linked in the whole NVML API for seven calls. Loading
// libnvidia-ml at run time also keeps the binary starting on machines
// without the driver, where discovery answers ErrNoDriver.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
typedef struct {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

static nvmlReturn_t (*p_init)(void);
static nvmlReturn_t (*p_shutdown)(void);
static nvmlReturn_t (*p_count)(unsigned int *);
static nvmlReturn_t (*p_handle)(unsigned int, nvmlDevice_t *);
static nvmlReturn_t (*p_uuid)(nvmlDevice_t, char *, unsigned int);
static nvmlReturn_t (*p_name)(nvmlDevice_t, char *, unsigned int);
static nvmlReturn_t (*p_memory)(nvmlDevice_t, nvmlMemory_t *);
static const char *(*p_error)(nvmlReturn_t);

// sk_nvml_load opens the library and resolves every symbol: 0 on success,
// 1 when the library is not there, 2 when a symbol is missing.
static int sk_nvml_load(void) {
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		lib = dlopen("libnvidia-ml.so", RTLD_NOW | RTLD_LOCAL);
	}
	if (lib == NULL) {
		return 1;
	}
	p_init = dlsym(lib, "nvmlInit_v2");
	p_shutdown = dlsym(lib, "nvmlShutdown");
	p_count = dlsym(lib, "nvmlDeviceGetCount_v2");
	p_handle = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
	p_uuid = dlsym(lib, "nvmlDeviceGetUUID");
	p_name = dlsym(lib, "nvmlDeviceGetName");
	p_memory = dlsym(lib, "nvmlDeviceGetMemoryInfo");
	p_error = dlsym(lib, "nvmlErrorString");
	if (!p_init || !p_shutdown || !p_count || !p_handle || !p_uuid || !p_name || !p_memory || !p_error) {
		return 2;
	}
	return 0;
}

static nvmlReturn_t sk_nvml_init(void) { return p_init(); }
static nvmlReturn_t sk_nvml_shutdown(void) { return p_shutdown(); }
static nvmlReturn_t sk_nvml_count(unsigned int *n) { return p_count(n); }
static nvmlReturn_t sk_nvml_handle(unsigned int i, nvmlDevice_t *d) { return p_handle(i, d); }
static nvmlReturn_t sk_nvml_uuid(nvmlDevice_t d, char *b, unsigned int n) { return p_uuid(d, b, n); }
static nvmlReturn_t sk_nvml_name(nvmlDevice_t d, char *b, unsigned int n) { return p_name(d, b, n); }
static nvmlReturn_t sk_nvml_memory(nvmlDevice_t d, unsigned long long *total) {
	nvmlMemory_t m;
	nvmlReturn_t r = p_memory(d, &m);
	*total = m.total;
	return r;
}
static const char *sk_nvml_error(nvmlReturn_t r) { return p_error(r); }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// NVML's return codes that discovery tells apart (nvml.h).
const (
	nvmlSuccess            = 0
	nvmlErrDriverNotLoaded = 9
	nvmlErrLibNotFound     = 12
)

// nvmlBufferSize holds a UUID or a name (NVML_DEVICE_UUID_V2_BUFFER_SIZE
// and NVML_DEVICE_NAME_V2_BUFFER_SIZE are both 96).
const nvmlBufferSize = 96

// loadNVML opens libnvidia-ml once per process.
var loadNVML = sync.OnceValue(func() error {
	switch C.sk_nvml_load() {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%w: libnvidia-ml.so.1 not found", ErrNoDriver)
	default:
		return errors.New("nvml: libnvidia-ml lacks a function discovery needs (driver too old?)")
	}
})

// nvmlError names an NVML return code as the library does.
func nvmlError(what string, r C.nvmlReturn_t) error {
	return fmt.Errorf("%s: %s", what, C.GoString(C.sk_nvml_error(r)))
}

// nvmlDevices lists the GPUs NVML sees, by NVML index (what nvidia-smi and,
// with CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA number them by) and UUID.
func nvmlDevices(_ context.Context, slot string) ([]domain.Device, error) {
	if err := loadNVML(); err != nil {
		return nil, err
	}
	if r := C.sk_nvml_init(); r != nvmlSuccess {
		if r == nvmlErrLibNotFound || r == nvmlErrDriverNotLoaded {
			return nil, fmt.Errorf("%w: %w", ErrNoDriver, nvmlError("nvml init", r))
		}
		return nil, nvmlError("nvml init", r)
	}
	defer C.sk_nvml_shutdown()
	var n C.uint
	if r := C.sk_nvml_count(&n); r != nvmlSuccess {
		return nil, nvmlError("nvml device count", r)
	}
	var buf [nvmlBufferSize]C.char
	text := func(get func(*C.char) C.nvmlReturn_t) (string, C.nvmlReturn_t) {
		if r := get(&buf[0]); r != nvmlSuccess {
			return "", r
		}
		return C.GoString(&buf[0]), nvmlSuccess
	}
	out := make([]domain.Device, 0, int(n))
	for i := range int(n) {
		var d C.nvmlDevice_t
		if r := C.sk_nvml_handle(C.uint(i), &d); r != nvmlSuccess {
			return nil, nvmlError(fmt.Sprintf("nvml device %d", i), r)
		}
		uuid, r := text(func(b *C.char) C.nvmlReturn_t { return C.sk_nvml_uuid(d, b, nvmlBufferSize) })
		if r != nvmlSuccess {
			return nil, nvmlError(fmt.Sprintf("nvml device %d uuid", i), r)
		}
		name, _ := text(func(b *C.char) C.nvmlReturn_t { return C.sk_nvml_name(d, b, nvmlBufferSize) })
		var total C.ulonglong
		var mem int64
		if C.sk_nvml_memory(d, &total) == nvmlSuccess {
			mem = int64(total)
		}
		out = append(out, domain.Device{ID: uuid, Index: i, Slot: slot, Model: name, Memory: mem})
	}
	return out, nil
}
