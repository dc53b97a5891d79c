package slurm

// Abandon stops the runtime as a crash would: the poller ends, the table
// refuses new kernels, and the jobs keep running in SLURM.
func Abandon(r *Runtime) {
	r.kernels.Close()
	r.images.Close()
	r.stopLoop()
	<-r.loopDone
}
