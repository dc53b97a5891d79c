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

// Uncommit takes back what Commit added for s, when a job's gang that s
// was part of turns out not to fit whole.
func (st *State) Uncommit(s *Session) {
	if a := s.Pending.Session.Array; a != "" && st.arrayRunning[a] > 0 {
		st.arrayRunning[a]--
	}
	for _, o := range []*owner{s.User, s.Project, s.Domain} {
		o.Occupied.Sub(s.Total.Vec)
		o.Active--
	}
	if g, ok := st.GroupUse[s.Pending.Session.Owner.User]; ok {
		g.Sub(s.Total.Vec)
	}
	if r, ok := st.RoundUse[Association{Project: s.Pending.Session.Owner.Project, User: s.Pending.Session.Owner.User}]; ok {
		r.Sub(s.Total.Vec)
	}
}

// Release gives back the kernels Place reserved for s: one reservation of
// its total on one agent for a single-node session, one per kernel for a
// multi-node one. Unreserve voids the round's cached misses, so nothing a
// later session tries is judged on a state that no longer holds.
func (st *State) Release(s *Session, kernels []KernelPlacement) {
	// Devices granted to the kernels go back too, or the pools would stay
	// short of what Free says is there for the rest of the round.
	for _, kp := range kernels {
		if a, ok := st.AgentIndex(kp.Agent); ok {
			st.giveDevices(a, kp.Devices)
		}
	}
	if !s.MultiNode {
		if len(kernels) > 0 {
			if a, ok := st.AgentIndex(kernels[0].Agent); ok {
				st.Unreserve(a, &s.Total)
			}
		}
		return
	}
	for k, kp := range kernels {
		if a, ok := st.AgentIndex(kp.Agent); ok {
			st.Unreserve(a, &s.PerKernel[k])
		}
	}
}
