//go:build !(cgo && linux)

package main

import "errors"

type cudaDriver struct{ path string }

func openCUDA([]string) (*cudaDriver, error) {
	return nil, errors.New("gpucheck was built without cgo: build it with CGO_ENABLED=1 to load libcuda")
}

func (*cudaDriver) devices() ([]cudaDevice, error) { return nil, errors.New("no CUDA") }

func (*cudaDriver) use(cudaDevice, int) error { return errors.New("no CUDA") }
