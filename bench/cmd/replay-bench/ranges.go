package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/tailorhq/tailor/internal/replay"
)

// rangeSpec is the checked-in record of what the benchmark measured, with
// the reason each range is as wide as it is. A figure leaving its range
// means the recommender or the replay changed behaviour: look, then either
// fix the change or re-record the range with a new reason.
type rangeSpec struct {
	Policies map[string]policyRanges `json:"policies"`
}

type policyRanges struct {
	Reason string                 `json:"reason"`
	CPU    map[string]figureRange `json:"cpu"`
	Memory map[string]figureRange `json:"memory"`
}

type figureRange struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
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

// check returns one message per figure outside its range, and per policy
// or figure named in the spec that the report does not have.
func (s *rangeSpec) check(rep *replay.Report) []string {
	byName := map[string]replay.PolicyResult{}
	for _, p := range rep.Policies {
		byName[p.Policy] = p
	}
	var errs []string
	names := make([]string, 0, len(s.Policies))
	for n := range s.Policies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		pr := s.Policies[name]
		got, ok := byName[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: policy not in the report", name))
			continue
		}
		errs = append(errs, checkFigures(name+" cpu", got.CPU, pr.CPU)...)
		errs = append(errs, checkFigures(name+" memory", got.Memory, pr.Memory)...)
	}
	return errs
}

func checkFigures(what string, got replay.Figures, want map[string]figureRange) []string {
	values := map[string]float64{
		"provisionedOverUsed": got.ProvisionedOverUsed,
		"overPct":             got.OverPct,
		"overPctP90":          got.OverPctP90,
		"changesPerDay":       got.ChangesPerDay,
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []string
	for _, k := range keys {
		r := want[k]
		v, ok := values[k]
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("%s %s: no such figure", what, k))
		case v < r.Min || v > r.Max:
			errs = append(errs, fmt.Sprintf("%s %s = %.4g, recorded range [%g, %g]", what, k, v, r.Min, r.Max))
		}
	}
	return errs
}
