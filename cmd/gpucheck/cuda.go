//go:build cgo && linux

package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// The few driver API entry points the probe needs, declared here so no CUDA
// header is needed to build: their signatures are fixed by the driver ABI.
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

static void *cuda;

static const char *cu_open(const char *path) {
	cuda = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	return cuda ? NULL : dlerror();
}

static void *cu_sym(const char *name) { return cuda ? dlsym(cuda, name) : NULL; }

static CUresult cu_init(void *f) { return ((CUresult (*)(unsigned))f)(0); }
static CUresult cu_count(void *f, int *n) { return ((CUresult (*)(int *))f)(n); }
static CUresult cu_get(void *f, CUdevice *d, int i) { return ((CUresult (*)(CUdevice *, int))f)(d, i); }
static CUresult cu_uuid(void *f, unsigned char *u, CUdevice d) { return ((CUresult (*)(unsigned char *, CUdevice))f)(u, d); }
static CUresult cu_total(void *f, size_t *b, CUdevice d) { return ((CUresult (*)(size_t *, CUdevice))f)(b, d); }
static CUresult cu_retain(void *f, CUcontext *c, CUdevice d) { return ((CUresult (*)(CUcontext *, CUdevice))f)(c, d); }
static CUresult cu_set(void *f, CUcontext c) { return ((CUresult (*)(CUcontext))f)(c); }
static CUresult cu_alloc(void *f, CUdeviceptr *p, size_t n) { return ((CUresult (*)(CUdeviceptr *, size_t))f)(p, n); }
static CUresult cu_memset(void *f, CUdeviceptr p, unsigned char v, size_t n) { return ((CUresult (*)(CUdeviceptr, unsigned char, size_t))f)(p, v, n); }
static CUresult cu_sync(void *f) { return ((CUresult (*)(void))f)(); }
static CUresult cu_dtoh(void *f, void *h, CUdeviceptr p, size_t n) { return ((CUresult (*)(void *, CUdeviceptr, size_t))f)(h, p, n); }
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// cudaErrorNoDevice is CUDA_ERROR_NO_DEVICE.
const cudaErrorNoDevice = 100

// cudaDriver is libcuda, opened with dlopen: the probe has no CUDA build
// dependency, and CUDA_VISIBLE_DEVICES acts on it exactly as on any CUDA
// program, which is the point of asking it.
type cudaDriver struct{ path string }

func openCUDA(paths []string) (*cudaDriver, error) {
	var errs []error
	for _, p := range paths {
		cp := C.CString(p)
		msg := C.cu_open(cp)
		C.free(unsafe.Pointer(cp))
		if msg == nil {
			return &cudaDriver{path: p}, nil
		}
		errs = append(errs, errors.New(C.GoString(msg)))
	}
	return nil, errors.Join(errs...)
}

func (d *cudaDriver) sym(name string) (unsafe.Pointer, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	f := C.cu_sym(cn)
	if f == nil {
		return nil, fmt.Errorf("libcuda has no %s", name)
	}
	return f, nil
}

// call resolves name and runs fn with it, turning a CUresult into an error.
func (d *cudaDriver) call(name string, fn func(unsafe.Pointer) C.CUresult) error {
	f, err := d.sym(name)
	if err != nil {
		return err
	}
	if r := fn(f); r != 0 {
		return fmt.Errorf("%s: CUresult %d", name, int(r))
	}
	return nil
}

// devices lists what CUDA enumerates, in its order.
func (d *cudaDriver) devices() ([]cudaDevice, error) {
	f, err := d.sym("cuInit")
	if err != nil {
		return nil, err
	}
	switch r := C.cu_init(f); r {
	case 0:
	case cudaErrorNoDevice:
		// What CUDA answers when CUDA_VISIBLE_DEVICES hides every GPU.
		return nil, nil
	default:
		return nil, fmt.Errorf("cuInit: CUresult %d", int(r))
	}
	var n C.int
	if err := d.call("cuDeviceGetCount", func(f unsafe.Pointer) C.CUresult { return C.cu_count(f, &n) }); err != nil {
		return nil, err
	}
	out := make([]cudaDevice, 0, int(n))
	for i := range int(n) {
		var dev C.CUdevice
		if err := d.call("cuDeviceGet", func(f unsafe.Pointer) C.CUresult { return C.cu_get(f, &dev, C.int(i)) }); err != nil {
			return nil, err
		}
		var u [16]byte
		uuidFn := "cuDeviceGetUuid_v2"
		if _, err := d.sym(uuidFn); err != nil {
			uuidFn = "cuDeviceGetUuid"
		}
		if err := d.call(uuidFn, func(f unsafe.Pointer) C.CUresult {
			return C.cu_uuid(f, (*C.uchar)(unsafe.Pointer(&u[0])), dev)
		}); err != nil {
			return nil, err
		}
		var total C.size_t
		if err := d.call("cuDeviceTotalMem_v2", func(f unsafe.Pointer) C.CUresult { return C.cu_total(f, &total, dev) }); err != nil {
			return nil, err
		}
		out = append(out, cudaDevice{Ordinal: i, UUID: formatUUID(u), Memory: int64(total), dev: int(dev)})
	}
	return out, nil
}

// use makes dev's primary context current, allocates n bytes, fills them
// on the GPU and reads one back: work the GPU itself did, and a process
// nvidia-smi lists with the memory in use until the probe exits.
func (d *cudaDriver) use(dev cudaDevice, n int) error {
	var ctx C.CUcontext
	if err := d.call("cuDevicePrimaryCtxRetain", func(f unsafe.Pointer) C.CUresult {
		return C.cu_retain(f, &ctx, C.CUdevice(dev.dev))
	}); err != nil {
		return err
	}
	if err := d.call("cuCtxSetCurrent", func(f unsafe.Pointer) C.CUresult { return C.cu_set(f, ctx) }); err != nil {
		return err
	}
	var p C.CUdeviceptr
	if err := d.call("cuMemAlloc_v2", func(f unsafe.Pointer) C.CUresult { return C.cu_alloc(f, &p, C.size_t(n)) }); err != nil {
		return err
	}
	if err := d.call("cuMemsetD8_v2", func(f unsafe.Pointer) C.CUresult { return C.cu_memset(f, p, 0x5a, C.size_t(n)) }); err != nil {
		return err
	}
	if err := d.call("cuCtxSynchronize", func(f unsafe.Pointer) C.CUresult { return C.cu_sync(f) }); err != nil {
		return err
	}
	var b [1]byte
	if err := d.call("cuMemcpyDtoH_v2", func(f unsafe.Pointer) C.CUresult {
		return C.cu_dtoh(f, unsafe.Pointer(&b[0]), p+C.CUdeviceptr(n-1), 1)
	}); err != nil {
		return err
	}
	if b[0] != 0x5a {
		return fmt.Errorf("read back %#x from the GPU, wrote 0x5a", b[0])
	}
	return nil
}
