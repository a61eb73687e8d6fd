package main

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"github.com/tailorhq/tailor/internal/replay"
)

// shape is one real VM's usage over time, each sample a fraction of the
// VM's own peak, so it can drive a pod of any size.
type shape struct {
	name, kind string
	cpu, mem   []float64
}

// Shape kinds, by how a series moves.
const (
	kindSteady  = "steady"
	kindDiurnal = "diurnal"
	kindSpiky   = "batch-spikes"
)

// loadShapes reads the first files of a Bitbrains month and keeps up to
// perKind series of each kind: steady (CPU's coefficient of variation
// under 0.3), batch spikes (p99 over 5x the median) and diurnal (the rest,
// which in this trace mostly follow the day). Pods are given the shapes in
// turn, so every size sees the same mix.
func loadShapes(dir string, files, perKind int) ([]*shape, map[string]int, error) {
	var paths []string
	for i := 1; i <= files; i++ {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("%d.csv.gz", i)))
	}
	series, err := replay.ReadPaths(paths, replay.FormatBitbrains)
	if err != nil {
		return nil, nil, fmt.Errorf("reading traces from %s: %w", dir, err)
	}
	byKind := map[string][]*shape{}
	for _, s := range series {
		if len(s.Samples) < 288 {
			continue
		}
		sh := toShape(s)
		if sh == nil || len(byKind[sh.kind]) >= perKind {
			continue
		}
		byKind[sh.kind] = append(byKind[sh.kind], sh)
	}
	var out []*shape
	counts := map[string]int{}
	kinds := []string{kindSteady, kindDiurnal, kindSpiky}
	for i := 0; ; i++ {
		added := false
		for _, k := range kinds {
			if i < len(byKind[k]) {
				out = append(out, byKind[k][i])
				counts[k]++
				added = true
			}
		}
		if !added {
			break
		}
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("no usable series in %s", dir)
	}
	return out, counts, nil
}

func toShape(s replay.Series) *shape {
	cpu := make([]float64, len(s.Samples))
	mem := make([]float64, len(s.Samples))
	lastMem := math.NaN()
	for i, x := range s.Samples {
		cpu[i] = x.CPU
		if x.HasMemory() && x.Memory > 0 {
			lastMem = x.Memory
		}
		mem[i] = lastMem
	}
	sorted := append([]float64(nil), cpu...)
	sort.Float64s(sorted)
	median, p99, top := sorted[len(sorted)/2], sorted[len(sorted)*99/100], sorted[len(sorted)*995/1000]
	if top <= 0 {
		return nil
	}
	var mean, sq float64
	for _, v := range cpu {
		mean += v
	}
	mean /= float64(len(cpu))
	for _, v := range cpu {
		sq += (v - mean) * (v - mean)
	}
	cv := math.Sqrt(sq/float64(len(cpu))) / mean
	kind := kindDiurnal
	switch {
	case cv < 0.3:
		kind = kindSteady
	case median > 0 && p99/median > 5:
		kind = kindSpiky
	}
	var memTop float64
	for _, v := range mem {
		if !math.IsNaN(v) {
			memTop = math.Max(memTop, v)
		}
	}
	if memTop <= 0 {
		return nil
	}
	for i := range cpu {
		cpu[i] = math.Max(0.02, math.Min(1, cpu[i]/top))
		if math.IsNaN(mem[i]) {
			mem[i] = 0.5
		} else {
			mem[i] = math.Max(0.05, mem[i]/memTop)
		}
	}
	return &shape{name: s.Name, kind: kind, cpu: cpu, mem: mem}
}
