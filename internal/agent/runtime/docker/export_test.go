package docker

// Abandon stops the runtime's goroutines and drops its engine connection
// without touching a container: what a crash of the agent leaves behind,
// for the tests of Recover.
func (r *Runtime) Abandon() {
	r.images.Close()
	r.kernels.Close()
	r.cancelBG()
	r.watchers.Wait()
	_ = r.cli.Close()
}
