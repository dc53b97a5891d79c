package domain

import (
	"errors"
	"fmt"
	"strings"
)

// GroupEvent moves a resource group between its object states (seed 003's
// Start, Stop and Remove, and Delete, which ends a drained group).
type GroupEvent string

// Resource group events.
const (
	GroupStart  GroupEvent = "Start"
	GroupStop   GroupEvent = "Stop"
	GroupRemove GroupEvent = "Remove"
	// GroupDelete is DELETE /v1/resource-groups/{name}. The table allows
	// it from DRAINING only; the store also wants the group to hold no
	// live session and no agent (store.RemoveResourceGroup).
	GroupDelete GroupEvent = "Delete"
)

// GroupEvents lists the events in table order.
func GroupEvents() []GroupEvent { return []GroupEvent{GroupStart, GroupStop, GroupRemove, GroupDelete} }

// GroupTransition is one row of the object state table.
type GroupTransition struct {
	Event GroupEvent
	From  GroupState
	To    GroupState
}

// groupTransitions is seed 003's object state machine. DRAINING has no way
// back: the seed gives it none, because a group being removed must not
// start taking work again halfway through its cleanup; it ends in REMOVED,
// which is final and which no event, Delete included, leaves. Repeating the event
// that led to the current state is legal and changes nothing, so an admin
// re-running the same command is not an error.
var groupTransitions = []GroupTransition{
	{GroupStart, GroupActive, GroupActive},
	{GroupStart, GroupStopped, GroupActive},
	{GroupStop, GroupActive, GroupStopped},
	{GroupStop, GroupStopped, GroupStopped},
	{GroupRemove, GroupActive, GroupDraining},
	{GroupRemove, GroupStopped, GroupDraining},
	{GroupRemove, GroupDraining, GroupDraining},
	{GroupDelete, GroupDraining, GroupRemoved},
}

// GroupTransitions returns a copy of the table, in order.
func GroupTransitions() []GroupTransition {
	return append([]GroupTransition(nil), groupTransitions...)
}

// ErrIllegalGroupEvent marks an event the table has no row for.
var ErrIllegalGroupEvent = errors.New("illegal resource group state change")

// NextGroupState looks (event, from) up in the table.
func NextGroupState(e GroupEvent, from GroupState) (GroupState, error) {
	return nextState(groupTransitions, func(t GroupTransition) (GroupEvent, GroupState, GroupState) {
		return t.Event, t.From, t.To
	}, e, from, ErrIllegalGroupEvent)
}

// GroupEventTo names the event that requests the target state, so an API
// that takes the wanted state ("state": "DRAINING") still goes through the
// table rather than writing the state as given.
func GroupEventTo(to GroupState) (GroupEvent, error) {
	switch to {
	case GroupActive:
		return GroupStart, nil
	case GroupStopped:
		return GroupStop, nil
	case GroupDraining:
		return GroupRemove, nil
	case GroupRemoved:
		return GroupDelete, nil
	}
	return "", fmt.Errorf("unknown resource group state %s", to)
}

// ParseGroupEvent reads an event name, case-insensitively.
func ParseGroupEvent(name string) (GroupEvent, error) {
	for _, e := range GroupEvents() {
		if strings.EqualFold(string(e), name) {
			return e, nil
		}
	}
	return "", fmt.Errorf("unknown resource group event %q (want Start, Stop, Remove or Delete)", name)
}

// Schedules reports whether rounds place sessions of a group in this state:
// STOPPED holds its queue; DRAINING keeps scheduling what it already holds.
func (s GroupState) Schedules() bool { return s == GroupActive || s == GroupDraining }

// Admits reports whether the group accepts new sessions. A STOPPED group
// still takes them, since it may start again; a DRAINING one never will.
func (s GroupState) Admits() bool { return s == GroupActive || s == GroupStopped }
