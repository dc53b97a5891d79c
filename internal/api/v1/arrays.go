package v1

import "time"

// Array is a session array (SLURM's job array): one spec, submitted
// once, whose elements are sessions named name[index].
type Array struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Owner string `json:"owner"`
	// Spec is the index spec as submitted; Count its elements;
	// MaxRunning the cap on how many hold resources at once (0: none).
	Spec       string    `json:"spec"`
	Count      int       `json:"count"`
	MaxRunning int       `json:"max_running"`
	CreatedAt  time.Time `json:"created_at"`
	// Statuses counts the elements by status; Outcomes the ended ones
	// by outcome. An attempt preemption requeued counts once, as its
	// latest.
	Statuses map[string]int `json:"statuses"`
	Outcomes map[string]int `json:"outcomes"`
	// Live is how many elements have not ended.
	Live int `json:"live"`
	// Outcome sums up the elements once all have ended: success when
	// every one succeeded, cancelled when none ran, failure otherwise;
	// empty while any is live.
	Outcome string `json:"outcome,omitempty"`
	// Elements, in index order, are on GET /v1/arrays/{id} only.
	Elements []ArrayElement `json:"elements,omitempty"`
}

// ArrayElement is one session of an array.
type ArrayElement struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Index   int    `json:"index"`
	Status  string `json:"status"`
	Outcome string `json:"outcome,omitempty"`
}

// ArrayRemoved is what DELETE /v1/arrays/{id} answers: the array after,
// and how many elements it cancelled or began to terminate.
type ArrayRemoved struct {
	Array Array `json:"array"`
	Ended int   `json:"ended"`
}
