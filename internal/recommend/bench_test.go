package recommend

import (
	"math"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkSample measures one sample's cost as a controller pays it: add
// the sample, then decide. It reports the state's size, which is what a
// controller holds per container.
func BenchmarkSample(b *testing.B) {
	r, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	s := r.NewState()
	cur, changed := Resources{}, time.Time{}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// A daily wave with noise, so windows roll and decisions vary.
		x := float64(i)
		cpu := 1 + 0.5*math.Sin(x/144) + 0.1*math.Sin(x*1.7)
		s.AddSample(Sample{CPU: cpu, Memory: (500 + 100*math.Sin(x/288)) * (1 << 20)}, now)
		rec := s.Recommend(cur, changed, now)
		if next := (Resources{CPU: rec.CPU.Target, Memory: rec.Memory.Target}); next != cur {
			cur, changed = next, now
		}
		now = now.Add(5 * time.Minute)
	}
	b.ReportMetric(float64(unsafe.Sizeof(State{})), "state-bytes")
}

// BenchmarkReason measures the reason text, built only when read.
func BenchmarkReason(b *testing.B) {
	r, _ := New(DefaultConfig())
	s := r.NewState()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.AddSample(Sample{CPU: 1, Memory: 1 << 30}, now)
	rec := s.Recommend(Resources{CPU: 0.5, Memory: 1 << 29}, time.Time{}, now)
	b.ReportAllocs()
	for b.Loop() {
		_ = rec.CPU.Reason()
	}
}
