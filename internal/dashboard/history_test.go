package dashboard

import (
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/internal/controller/policy"
)

var (
	t0  = time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	key = types.NamespacedName{Namespace: "ns", Name: "web"}
)

func obs(at time.Time, cpu float64) policy.Observation {
	nan := math.NaN()
	return policy.Observation{Time: at, Containers: []policy.ContainerObservation{{
		Name: "app", CPU: cpu, CPURequest: 0.5, CPULimit: nan, CPUTarget: 0.3, Memory: 100 << 20, MemoryRequest: 200 << 20, MemoryLimit: nan, MemoryTarget: nan,
	}}, Pods: []policy.PodObservation{{Name: "web-1", CPURequest: 0.5}}}
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
	h.Resized(key, policy.ResizeMark{Time: t0, Pod: "web-1", Generation: 2, Result: "InProgress"})
	h.Resized(key, policy.ResizeMark{Time: t0, Pod: "web-1", Generation: 2, Result: "Done", Change: "cpu 500m->300m"})
	s, _ := h.Snapshot(key)
	if len(s.Marks) != 1 || s.Marks[0].Result != "Done" {
		t.Fatalf("marks %+v, want one Done", s.Marks)
	}
	if n, short := h.Resizes(key, t0.Add(-time.Hour)); n != 1 || short {
		t.Errorf("resizes %d (short %v), want 1", n, short)
	}
	h.Resized(key, policy.ResizeMark{Time: t0.Add(time.Minute), Pod: "web-2", Result: policy.ResultRefused})
	for i := range 3 {
		h.Resized(key, policy.ResizeMark{Time: t0.Add(time.Duration(2+i) * time.Minute), Pod: "web-1", Generation: int64(3 + i), Result: "Done"})
	}
	s, _ = h.Snapshot(key)
	if len(s.Marks) != 3 || s.Marks[0].Generation != 3 {
		t.Fatalf("marks %+v, want the newest 3", s.Marks)
	}
	if n, short := h.Resizes(key, t0.Add(-time.Hour)); n != 3 || !short {
		t.Errorf("resizes %d (short %v), want 3 and short", n, short)
	}
}
