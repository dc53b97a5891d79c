package v1

// List is the answer of every list endpoint.
type List[T any] struct {
	Items []T `json:"items"`
}

// Status is the answer of /healthz and /readyz.
type Status struct {
	// Status is "ok" (alive) or "ready" (the store answers).
	Status string `json:"status"`
}
