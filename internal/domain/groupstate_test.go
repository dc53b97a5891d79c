package domain

import (
	"errors"
	"testing"
)

func TestGroupStateTable(t *testing.T) {
	states := []GroupState{GroupActive, GroupStopped, GroupDraining, GroupRemoved}
	want := map[GroupState]map[GroupEvent]GroupState{
		GroupActive:   {GroupStart: GroupActive, GroupStop: GroupStopped, GroupRemove: GroupDraining},
		GroupStopped:  {GroupStart: GroupActive, GroupStop: GroupStopped, GroupRemove: GroupDraining},
		GroupDraining: {GroupRemove: GroupDraining, GroupDelete: GroupRemoved}, // no Start, no Stop
		GroupRemoved:  {},                                                      // final: nothing, not even Delete again
	}
	for _, from := range states {
		for _, e := range GroupEvents() {
			t.Run(string(e)+"/"+from.String(), func(t *testing.T) {
				got, err := NextGroupState(e, from)
				to, legal := want[from][e]
				if !legal {
					if !errors.Is(err, ErrIllegalGroupEvent) {
						t.Fatalf("NextGroupState(%s, %s) = %v, %v; want ErrIllegalGroupEvent", e, from, got, err)
					}
					return
				}
				if err != nil || got != to {
					t.Fatalf("NextGroupState(%s, %s) = %v, %v; want %v", e, from, got, err, to)
				}
			})
		}
	}
}

func TestGroupStateSchedulesAndAdmits(t *testing.T) {
	for _, c := range []struct {
		s                 GroupState
		schedules, admits bool
	}{
		{GroupActive, true, true},
		{GroupStopped, false, true},
		{GroupDraining, true, false},
		{GroupRemoved, false, false},
	} {
		if c.s.Schedules() != c.schedules || c.s.Admits() != c.admits {
			t.Errorf("%v: Schedules=%v Admits=%v; want %v %v", c.s, c.s.Schedules(), c.s.Admits(), c.schedules, c.admits)
		}
	}
}

func TestGroupEventTo(t *testing.T) {
	for _, s := range []GroupState{GroupActive, GroupStopped, GroupDraining} {
		e, err := GroupEventTo(s)
		if err != nil {
			t.Fatal(err)
		}
		// From STOPPED every target is reachable, so the event must lead there.
		if got, err := NextGroupState(e, GroupStopped); err != nil || got != s {
			t.Errorf("GroupEventTo(%v) = %s leads to %v, %v", s, e, got, err)
		}
	}
}
