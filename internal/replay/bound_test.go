package replay

import (
	"os"
	"sort"
	"testing"
	"time"
)

func TestBound(t *testing.T) {
	bucket, _ := time.ParseDuration(os.Getenv("BUCKET"))
	if os.Getenv("EXPLORE") == "" {
		t.Skip()
	}
	ss, err := ReadPaths([]string{"/work/shared/traces/bitbrains-rnd/2013-7"}, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	qs := []float64{0.9, 0.95, 0.99, 1}
	cpuQ := make([]float64, len(qs))
	memQ := make([]float64, len(qs))
	var cpuMean, memMean float64
	// Daily-static hindsight: each day provisioned at that day's quantile.
	dayCPU := make([]float64, len(qs))
	dayMem := make([]float64, len(qs))
	for _, s := range ss {
		if s.Span() < 7*24*time.Hour {
			continue
		}
		start := s.Samples[0].Time.Add(24 * time.Hour)
		var c, m []float64
		days := map[int][2][]float64{}
		for _, x := range s.Samples {
			if x.Time.Before(start) {
				continue
			}
			d := int(x.Time.Sub(start) / bucket)
			e := days[d]
			c = append(c, x.CPU)
			e[0] = append(e[0], x.CPU)
			if x.HasMemory() {
				m = append(m, x.Memory)
				e[1] = append(e[1], x.Memory)
			}
			days[d] = e
		}
		cpuMean += mean(c)
		memMean += mean(m)
		for i, q := range qs {
			cpuQ[i] += quant(c, q)
			memQ[i] += quant(m, q)
			var dc, dm float64
			for _, e := range days {
				dc += quant(e[0], q) * float64(len(e[0]))
				dm += quant(e[1], q) * float64(len(e[1]))
			}
			dayCPU[i] += dc / float64(len(c))
			if len(m) > 0 {
				dayMem[i] += dm / float64(len(m))
			}
		}
	}
	for i, q := range qs {
		t.Logf("q=%v static cpu %.2fx mem %.2fx   daily cpu %.2fx mem %.2fx", q, cpuQ[i]/cpuMean, memQ[i]/memMean, dayCPU[i]/cpuMean, dayMem[i]/memMean)
	}
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func quant(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}
