package framework

// JobInfo is what a round knows of a job with a pending member in the
// group (seed 004's PodGroupInfo): its gang size, its live members
// (submitted and not ended, pending ones included) and those already
// holding a placement.
type JobInfo struct {
	MinAvailable int
	Live         int
	Placed       int
}
