package framework

// SelectIndexed asks the index of all usable agents, as a round does for a
// session with no designated or avoided agents.
func (st *State) SelectIndexed(r Ranker, req *Request) int32 {
	return st.index(st.archCandidates(""), r).selectFirst(req, nil)
}

// Usables lists the usable agents in index order, what Select scans.
func (st *State) Usables() []int32 { return st.archCandidates("").idx }

// SetMaxSeen lowers how many agents an answer lists before it trims them.
func (st *State) SetMaxSeen(n int) { st.maxSeen = n }
