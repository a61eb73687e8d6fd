package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// roomRanges is the checked-in record of what the benchmark measured, with
// the reason each range is as wide as it is.
type roomRanges struct {
	Reason string `json:"reason"`
	// Arms holds each arm's figures by name (the JSON names of Result).
	Arms map[Arm]map[string]figureRange `json:"arms"`
}

type figureRange struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

func loadRanges(path string) (*roomRanges, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading ranges: %w", err)
	}
	var r roomRanges
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("parsing ranges %s: %w", path, err)
	}
	return &r, nil
}

// check returns one message per figure outside its range, and per arm or
// figure named in the ranges that the results do not have.
func (r *roomRanges) check(results []Result) []string {
	var bad []string
	byArm := map[Arm]map[string]float64{}
	for _, res := range results {
		data, err := json.Marshal(res)
		if err != nil {
			return []string{err.Error()}
		}
		figures := map[string]any{}
		if err := json.Unmarshal(data, &figures); err != nil {
			return []string{err.Error()}
		}
		byArm[res.Arm] = map[string]float64{}
		for k, v := range figures {
			if n, ok := v.(float64); ok {
				byArm[res.Arm][k] = n
			}
		}
	}
	for arm, figures := range r.Arms {
		got, ok := byArm[arm]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: no such arm in the results", arm))
			continue
		}
		for name, want := range figures {
			v, ok := got[name]
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%s %s: no such figure", arm, name))
			case v < want.Min || v > want.Max:
				bad = append(bad, fmt.Sprintf("%s %s = %g, want %g..%g", arm, name, v, want.Min, want.Max))
			}
		}
	}
	sort.Strings(bad)
	return bad
}
