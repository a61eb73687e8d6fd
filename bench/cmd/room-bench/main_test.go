package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The benchmark's mechanism on a small fleet: the same decisions with and
// without room made in place. Room in place lowers neighbours early, only
// ones of lower priority, never over-commits a node, and so raises more
// needy pods where they run and evicts fewer than recreating does; without
// it nobody is lowered early.
func TestRoomSavesEvictions(t *testing.T) {
	f := Fleet{Nodes: 12, Neighbours: 3, Spare: 12, Minutes: 16, Period: 10 * time.Second, Startup: time.Minute, Seed: 7}
	got := map[Arm]Result{}
	for _, arm := range []Arm{ArmRoom, ArmRecreate} {
		res, err := Run(f, arm)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", res)
		if res.TakenFromHigher != 0 || res.Overcommitted != 0 {
			t.Errorf("%s: room taken from equal or higher priority %d times, nodes over-committed %d times", arm, res.TakenFromHigher, res.Overcommitted)
		}
		if res.Needy != f.Nodes {
			t.Errorf("%s: %d needy pods, want one per node (%d)", arm, res.Needy, f.Nodes)
		}
		got[arm] = res
	}
	room, recreate := got[ArmRoom], got[ArmRecreate]
	if room.RoomGiven == 0 || recreate.RoomGiven != 0 {
		t.Errorf("lowered early for room: %d with room in place, %d without; want some, then none", room.RoomGiven, recreate.RoomGiven)
	}
	if room.Evictions >= recreate.Evictions || room.ThrottledMinutes >= recreate.ThrottledMinutes || room.RaisedInPlace <= recreate.RaisedInPlace {
		t.Errorf("room in place evicted %d, throttled %.1f pod-minutes, raised %d in place; recreate %d, %.1f, %d: want fewer evictions and minutes, more raised",
			room.Evictions, room.ThrottledMinutes, room.RaisedInPlace, recreate.Evictions, recreate.ThrottledMinutes, recreate.RaisedInPlace)
	}
	if recreate.Evictions == 0 {
		t.Error("recreate evicted nobody: the fleet never left a raise short for recreateAfter")
	}
}

// The recorded ranges name both arms and every figure a Result has, and
// check says which fall outside.
func TestRangesCoverEveryFigure(t *testing.T) {
	r, err := loadRanges("../../room-ranges.json")
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(Result{})
	if err != nil {
		t.Fatal(err)
	}
	figures := map[string]any{}
	if err := json.Unmarshal(data, &figures); err != nil {
		t.Fatal(err)
	}
	for _, arm := range []Arm{ArmRoom, ArmRecreate} {
		for name, v := range figures {
			if _, number := v.(float64); !number {
				continue
			}
			if _, ok := r.Arms[arm][name]; !ok {
				t.Errorf("room-ranges.json: %s has no range for %s", arm, name)
			}
		}
	}
	bad := r.check([]Result{{Arm: ArmRoom, Needy: 200, NoRoomPossible: 9, TakenFromHigher: 1}})
	joined := strings.Join(bad, "\n")
	if !strings.Contains(joined, "room in place takenFromHigher = 1, want 0..0") || !strings.Contains(joined, "recreate: no such arm") {
		t.Errorf("check said:\n%s", joined)
	}
}
