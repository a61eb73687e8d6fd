package dashboard

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/internal/observation"
)

var (
	t0  = time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	key = types.NamespacedName{Namespace: "ns", Name: "web"}
)

func obs(at time.Time, cpu float64) observation.Observation {
	nan := math.NaN()
	return observation.Observation{Time: at, Containers: []observation.ContainerObservation{{
		Name: "app", CPU: cpu, CPURequest: 0.5, CPULimit: nan, CPUTarget: 0.3, Memory: 100 << 20, MemoryRequest: 200 << 20, MemoryLimit: nan, MemoryTarget: nan,
	}}, Pods: []observation.PodObservation{{Name: "web-1", CPURequest: 0.5}}}
}

// The ring keeps the newest Points points, oldest first, one per Every at
// most; unknown figures come out as null.
func TestHistoryKeepsTheNewestPoints(t *testing.T) {
	h := NewHistory(5, 10*time.Second)
	for i := range 12 {
		h.Observe(key, obs(t0.Add(time.Duration(i)*10*time.Second), float64(i)))
		// A sync a pod event brought forward adds no point.
		h.Observe(key, obs(t0.Add(time.Duration(i)*10*time.Second+time.Second), 99))
	}
	s, ok := h.Snapshot(key)
	if !ok || len(s.Series) != 1 {
		t.Fatalf("snapshot %+v", s)
	}
	se := s.Series[0]
	if len(se.Time) != 5 {
		t.Fatalf("%d points, want 5", len(se.Time))
	}
	for i, v := range se.CPUUsage {
		if want := float64(7 + i); v == nil || *v != want || se.Time[i] != t0.Add(time.Duration(7+i)*10*time.Second).Unix() {
			t.Errorf("point %d: cpu %v at %d, want %v", i, v, se.Time[i], want)
		}
	}
	if se.CPULimit[0] != nil || se.MemoryTarget[0] != nil {
		t.Errorf("unknown figures must be null: limit %v, memory target %v", se.CPULimit[0], se.MemoryTarget[0])
	}
	if *se.MemoryRequest[0] != 200<<20 {
		t.Errorf("memory request %v", *se.MemoryRequest[0])
	}
	h.Forget(key)
	if _, ok := h.Snapshot(key); ok {
		t.Error("a forgotten policy still has history")
	}
}

// An outcome updates its resize's mark; marks are bounded; counts say when
// they may be short.
func TestHistoryMarks(t *testing.T) {
	h := NewHistory(10, time.Second)
	h.Marks = 3
	h.Resized(key, observation.ResizeMark{Time: t0, Pod: "web-1", Generation: 2, Result: "InProgress"})
	h.Resized(key, observation.ResizeMark{Time: t0, Pod: "web-1", Generation: 2, Result: "Done", Change: "cpu 500m->300m"})
	s, _ := h.Snapshot(key)
	if len(s.Marks) != 1 || s.Marks[0].Result != "Done" {
		t.Fatalf("marks %+v, want one Done", s.Marks)
	}
	if n, short := h.Resizes(key, t0.Add(-time.Hour)); n != 1 || short {
		t.Errorf("resizes %d (short %v), want 1", n, short)
	}
	h.Resized(key, observation.ResizeMark{Time: t0.Add(time.Minute), Pod: "web-2", Result: observation.ResultRefused})
	for i := range 3 {
		h.Resized(key, observation.ResizeMark{Time: t0.Add(time.Duration(2+i) * time.Minute), Pod: "web-1", Generation: int64(3 + i), Result: "Done"})
	}
	s, _ = h.Snapshot(key)
	if len(s.Marks) != 3 || s.Marks[0].Generation != 3 {
		t.Fatalf("marks %+v, want the newest 3", s.Marks)
	}
	// The counts keep more than the marks: the refusal is not one.
	if n, short := h.Resizes(key, t0.Add(-time.Hour)); n != 4 || short {
		t.Errorf("resizes %d (short %v), want 4", n, short)
	}
	if n, _ := h.Resizes(key, t0.Add(90*time.Second)); n != 3 {
		t.Errorf("resizes since t0+90s: %d, want 3", n)
	}
	for i := range maxSent {
		h.Resized(key, observation.ResizeMark{Time: t0.Add(time.Hour + time.Duration(i)*time.Second), Pod: "web-1", Generation: int64(10 + i), Result: "Done"})
	}
	if n, short := h.Resizes(key, t0.Add(-time.Hour)); n != maxSent || !short {
		t.Errorf("resizes %d (short %v), want %d and short", n, short, maxSent)
	}
}

// BenchmarkHistoryMemory fills a History as 10,000 pods under 1,000
// policies (two containers each) would after an hour at the default 10s
// sync, with 200 resizes per policy, and reports the heap it holds.
//
//	go test -run '^$' -bench HistoryMemory -benchtime 1x ./internal/dashboard
func BenchmarkHistoryMemory(b *testing.B) {
	const policies, podsEach = 1000, 10
	for range b.N {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		h := NewHistory(DefaultPoints, 10*time.Second)
		nan := math.NaN()
		for i := range policies {
			k := types.NamespacedName{Namespace: fmt.Sprintf("ns-%d", i%50), Name: fmt.Sprintf("policy-%d", i)}
			pods := make([]observation.PodObservation, podsEach)
			for j := range pods {
				pods[j] = observation.PodObservation{Name: fmt.Sprintf("%s-7d9f8c6b5-%05d", k.Name, j), Node: fmt.Sprintf("node-%03d", (i*podsEach+j)%500), CPURequest: 0.2, CPUBefore: 0.5, BeforeKnown: true}
			}
			for p := range DefaultPoints {
				h.Observe(k, observation.Observation{Time: t0.Add(time.Duration(p) * 10 * time.Second), Pods: pods, Containers: []observation.ContainerObservation{
					{Name: "app", CPU: 0.1, CPURequest: 0.2, CPULimit: 0.4, CPUTarget: 0.2, Memory: 1 << 28, MemoryRequest: 1 << 29, MemoryLimit: 1 << 30, MemoryTarget: nan},
					{Name: "sidecar", CPU: 0.01, CPURequest: 0.05, CPULimit: nan, CPUTarget: 0.02, Memory: 1 << 24, MemoryRequest: 1 << 25, MemoryLimit: nan, MemoryTarget: nan},
				}})
			}
			for m := range DefaultMarks {
				h.Resized(k, observation.ResizeMark{Time: t0.Add(time.Duration(m) * time.Minute), Pod: pods[m%podsEach].Name, Generation: int64(m + 2), Result: "Done",
					Change: "app cpu request 500m -> 212m, limit 1 -> 424m"})
			}
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-heap")
		runtime.KeepAlive(h)
	}
}
