// Command room-bench shows what making room in place saves against
// recreating, on a simulated fleet of full nodes with pods of mixed
// priorities (issue 37): each node's needy pod wants more CPU than its node
// has free, beside over-requested neighbours whose scale-down windows have
// not ended. Both arms run tailor's own sync decision (autoscale.DecideSync,
// with the controller's room board between syncs, as the manager runs them)
// on the same fleet; the one makes room in place by priority first, the
// other makes none (what tailor did before): its raises wait for the
// neighbours' windows or, after recreateAfter, their pods are evicted and
// recreated elsewhere.
//
// What is simulated: the pods' demand (a step up of each needy pod to 1.3-2.4
// cores at a random minute), the recommendation (demand plus 15%; a lowering
// held back for the 15-minute window, offered early), and the kubelet (a
// resize applied as soon as it is sent, a recreated pod down a minute). What is
// not: the recommender (bench/cmd/replay-bench replays that on real traces)
// and the apiserver (test/controller runs the same decisions against one).
//
// It prints a table, writes out/room.json and checks room-ranges.json.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"text/tabwriter"
	"time"
)

func main() {
	f := Fleet{Neighbours: 3, Period: 10 * time.Second, Startup: time.Minute}
	flag.IntVar(&f.Nodes, "nodes", 200, "full nodes, each with one needy pod and its neighbours")
	flag.IntVar(&f.Spare, "spare", 0, "empty nodes a recreated pod can land on (0: one per full node)")
	flag.IntVar(&f.Minutes, "minutes", 20, "simulated minutes")
	flag.Uint64Var(&f.Seed, "seed", 20261129, "seed the fleet is drawn from")
	ranges := flag.String("ranges", "room-ranges.json", "recorded ranges to check; empty to skip the check")
	out := flag.String("out", "out", "directory for room.json")
	flag.Parse()
	if f.Spare == 0 {
		f.Spare = f.Nodes
	}
	if err := run(f, *ranges, *out); err != nil {
		fmt.Fprintln(os.Stderr, "room-bench:", err)
		os.Exit(1)
	}
}

// Report is what out/room.json holds.
type Report struct {
	Fleet   Fleet    `json:"fleet"`
	Results []Result `json:"results"`
}

func run(f Fleet, rangesPath, out string) error {
	start := time.Now()
	rep := Report{Fleet: f}
	for _, arm := range []Arm{ArmRoom, ArmRecreate} {
		res, err := Run(f, arm)
		if err != nil {
			return fmt.Errorf("%s: %w", arm, err)
		}
		rep.Results = append(rep.Results, res)
	}
	fmt.Printf("room-bench: %d full nodes of 4 cores (%d neighbours each), %d spare, %d simulated minutes, a sync every %s, seed %d; %s/%s, %d CPUs, %s\n",
		f.Nodes, f.Neighbours, f.Spare, f.Minutes, f.Period, f.Seed, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Since(start).Round(time.Millisecond))
	printTable(rep.Results)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "room.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if rangesPath == "" {
		return nil
	}
	r, err := loadRanges(rangesPath)
	if err != nil {
		return err
	}
	if bad := r.check(rep.Results); len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintln(os.Stderr, "out of range:", b)
		}
		return fmt.Errorf("%d figure(s) outside %s", len(bad), rangesPath)
	}
	fmt.Printf("every figure within %s\n", rangesPath)
	return nil
}

func printTable(results []Result) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "arm\tneedy pods\tno lower-priority neighbour\traised in place\tevictions\tthrottled pod-min\tdown pod-min\tlowered early for room\ttaken from equal/higher\tover-committed node-syncs\t")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%d\t%d\t%d\t\n", r.Arm, r.Needy, r.NoRoomPossible, r.RaisedInPlace, r.Evictions,
			r.ThrottledMinutes, r.DownMinutes, r.RoomGiven, r.TakenFromHigher, r.Overcommitted)
	}
	_ = w.Flush()
}
