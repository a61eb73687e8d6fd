package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tailorhq/tailor/internal/replay"
)

// rangeSpec is the checked-in record of what the benchmark measured, with
// the reason each range is as wide as it is. A figure leaving its range
// means the recommender or the replay changed behaviour: look, then either
// fix the change or re-record the range with a new reason.
type rangeSpec struct {
	// Reason says how the ranges shared by every policy were recorded.
	Reason   string                  `json:"reason"`
	Policies map[string]policyRanges `json:"policies"`
}

type policyRanges struct {
	Reason string                 `json:"reason"`
	CPU    map[string]figureRange `json:"cpu"`
	Memory map[string]figureRange `json:"memory"`
	// Shapes holds memory as Kubernetes charges it: by shape name, then
	// by part of the trace ("whole" or a validation half: "1st half",
	// "2nd half", "odd VMs", "even VMs"; on the first node size, or on
	// another with its size after it: "whole on 32 GiB nodes"), then by
	// figure.
	Shapes map[string]map[string]map[string]figureRange `json:"shapes,omitempty"`
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
		errs = append(errs, checkShapes(rep, name, pr.Shapes)...)
	}
	return errs
}

// checkShapes checks one policy's memory figures by shape and part.
func checkShapes(rep *replay.Report, policy string, want map[string]map[string]map[string]figureRange) []string {
	pi := slices.IndexFunc(rep.Policies, func(p replay.PolicyResult) bool { return p.Policy == policy })
	var errs []string
	for _, shape := range sortedKeys(want) {
		si := slices.IndexFunc(rep.Shapes, func(s replay.Shape) bool { return s.Name == shape })
		if si < 0 {
			errs = append(errs, fmt.Sprintf("%s %s: shape not in the report", policy, shape))
			continue
		}
		for _, part := range sortedKeys(want[shape]) {
			sub, ok := subsetNamed(part, rep.NodeMemory)
			if !ok {
				errs = append(errs, fmt.Sprintf("%s %s %s: no such part (whole, or one of the validation halves, on the first node size or \"on N GiB nodes\" of another replayed)", policy, shape, part))
				continue
			}
			f := rep.Memory(pi, si, sub)
			values := map[string]float64{
				"requestsOverUsed": f.RequestsOverUsed,
				"overRequestPct":   f.OverRequestPct,
				"oomKills":         float64(f.OOMKills),
				"oomKillPct":       f.OOMKillPct,
				"oomKillPctP90":    f.OOMKillPctP90,
				"evictions":        f.Evictions,
				"nodes":            f.Nodes,
				"changesPerDay":    f.ChangesPerDay,
			}
			errs = append(errs, checkValues(fmt.Sprintf("%s %s %s", policy, shape, part), values, want[shape][part])...)
		}
	}
	return errs
}

// subsetNamed is the part of the trace a range names (see partName), on
// the node sizes replayed.
func subsetNamed(name string, nodeMemory []float64) (replay.Subset, bool) {
	node := 0
	if part, size, ok := strings.Cut(name, " on "); ok {
		gib, found := strings.CutSuffix(size, " GiB nodes")
		v, err := strconv.ParseFloat(gib, 64)
		if !found || err != nil {
			return replay.Subset{}, false
		}
		node = slices.Index(nodeMemory, v*(1<<30))
		if node <= 0 {
			// Not replayed, or the first size, which is named bare.
			return replay.Subset{}, false
		}
		name = part
	}
	if name == "whole" {
		return replay.Subset{Node: node}, true
	}
	for _, h := range halves {
		if h.name == name {
			sub := h.sub
			sub.Node = node
			return sub, true
		}
	}
	return replay.Subset{}, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func checkFigures(what string, got replay.Figures, want map[string]figureRange) []string {
	return checkValues(what, map[string]float64{
		"provisionedOverUsed": got.ProvisionedOverUsed,
		"overPct":             got.OverPct,
		"overPctP90":          got.OverPctP90,
		"changesPerDay":       got.ChangesPerDay,
	}, want)
}

func checkValues(what string, values map[string]float64, want map[string]figureRange) []string {
	var errs []string
	for _, k := range sortedKeys(want) {
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
