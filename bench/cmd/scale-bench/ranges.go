package main

import (
	"encoding/json"
	"fmt"
	"os"
)

// rangeSpec is the checked-in record of what the scale benchmark measured,
// each run's ranges with the reason they are as wide as they are. A figure
// out of its range means the manager's cost changed: look, then fix it or
// record the range again with a new reason.
type rangeSpec struct {
	Reason string     `json:"reason"`
	Runs   []runRange `json:"runs"`
}

type runRange struct {
	Pods     int    `json:"pods"`
	Nodes    int    `json:"nodes"`
	Policies int    `json:"policies"`
	Source   string `json:"source"`
	// Shards: 0 or 1 is one manager. MemoryLimit: as sizes write it
	// ("150Mi"), empty for none.
	Shards      int                    `json:"shards,omitempty"`
	MemoryLimit string                 `json:"memoryLimit,omitempty"`
	Reason      string                 `json:"reason"`
	Figures     map[string]figureRange `json:"figures"`
}

type figureRange struct {
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
}

func loadRanges(path string) (*rangeSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading ranges: %w", err)
	}
	var spec rangeSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("parsing ranges %s: %w", path, err)
	}
	return &spec, nil
}

// check returns one message per figure outside its range; a run without a
// recorded range is not checked.
func (s *rangeSpec) check(rs []*result) []string {
	var errs []string
	for _, r := range rs {
		b, err := json.Marshal(r)
		if err != nil {
			return []string{err.Error()}
		}
		var figs map[string]any
		if err := json.Unmarshal(b, &figs); err != nil {
			return []string{err.Error()}
		}
		for _, rr := range s.Runs {
			if rr.Pods != r.Pods || rr.Nodes != r.Nodes || rr.Policies != r.Policies || rr.Source != r.Source || max(1, rr.Shards) != max(1, r.Shards) || rr.MemoryLimit != limitName(r.MemoryLimitBytes) {
				continue
			}
			for name, fr := range rr.Figures {
				v, ok := figs[name].(float64)
				if !ok {
					errs = append(errs, fmt.Sprintf("%dx%dx%d %s: %s is not in the report", r.Pods, r.Nodes, r.Policies, r.Source, name))
					continue
				}
				if (fr.Min != nil && v < *fr.Min) || (fr.Max != nil && v > *fr.Max) {
					errs = append(errs, fmt.Sprintf("%dx%dx%d %s: %s = %v, recorded range %s (%s)", r.Pods, r.Nodes, r.Policies, r.Source, name, v, fr, rr.Reason))
				}
			}
		}
	}
	return errs
}

func (f figureRange) String() string {
	lo, hi := "-inf", "+inf"
	if f.Min != nil {
		lo = fmt.Sprint(*f.Min)
	}
	if f.Max != nil {
		hi = fmt.Sprint(*f.Max)
	}
	return "[" + lo + ", " + hi + "]"
}
