package v1

// List is the answer of every list endpoint.
type List[T any] struct {
	Items []T `json:"items"`
}

// SessionPage is one page of a session listing. Its sessions carry no
// command or env (they can be large; GET /v1/sessions/{id} has them).
type SessionPage struct {
	Items []Session `json:"items"`
	// Next, when set, is the after= that reads the following page; a page
	// without it is the last.
	Next string `json:"next,omitempty"`
}

// Status is the answer of /healthz and /readyz.
type Status struct {
	// Status is "ok" (alive) or "ready" (the store answers).
	Status string `json:"status"`
}
