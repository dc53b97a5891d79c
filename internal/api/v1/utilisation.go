package v1

import "time"

// Utilisation is a resource group's capacity and occupancy over time, as
// GET /v1/resource-groups/{name}/utilisation answers: the manager's
// samples (one every 10 s by default, kept 7 days) averaged per step.
// Only ALIVE agents count, toward capacity and occupancy alike.
type Utilisation struct {
	ResourceGroup string    `json:"resource_group"`
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
	// Step is the span each point averages, a Go duration ("10s").
	Step string `json:"step"`
	// Series has one entry per slot sampled in the range, by slot name.
	Series []UtilisationSeries `json:"series"`
}

// UtilisationSeries is one slot's points, oldest first. A step without
// samples (the manager was down, or the group had no ALIVE agent) has no
// point, so a chart can show the gap.
type UtilisationSeries struct {
	Slot   string             `json:"slot"`
	Points []UtilisationPoint `json:"points"`
}

// UtilisationPoint is one step: At is where it starts; Capacity and
// Occupied are averages in the slot's written unit (cores, bytes, devices,
// shares); Used is Occupied ÷ Capacity, 0 when there is no capacity.
type UtilisationPoint struct {
	At       time.Time `json:"at"`
	Capacity float64   `json:"capacity"`
	Occupied float64   `json:"occupied"`
	Used     float64   `json:"used"`
}
