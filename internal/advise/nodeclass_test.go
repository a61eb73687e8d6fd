package advise

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/test/builder"
)

// TestClassesLearnApart: a DaemonSet's pods on big nodes use twenty times
// what those on small nodes do. Learnt per class, each class gets its own
// recommendation and each pod its class's targets; the workload's is the
// largest class's. Learnt as one workload (no classes), the small nodes'
// pods are raised to the big nodes' size: what classes are for.
func TestClassesLearnApart(t *testing.T) {
	pod := func(name, node string) *corev1.Pod {
		return builder.Pod(name).Namespace("ns").UID(name).Node(node).
			Container(builder.Container("app").Requests("500m", "512Mi").Limits("", "4Gi")).Running().Obj()
	}
	big1, big2, small1, small2 := pod("big1", "b1"), pod("big2", "b2"), pod("small1", "s1"), pod("small2", "s2")
	all := []*corev1.Pod{big1, big2, small1, small2}
	class := map[string]string{"big1": "64cpu-256Gi", "big2": "64cpu-256Gi", "small1": "4cpu-16Gi", "small2": "4cpu-16Gi"}
	learn := func(classed bool) (*Model, []Pod) {
		m := configured(t, spec(), all...)
		v := views(all...)
		if classed {
			for i := range v {
				v[i].Class = class[v[i].Pod.Name]
			}
		}
		for i := range 30 {
			at := t0.Add(time.Duration(i) * time.Minute)
			m.Learn(spec(), v, usageOf(at, map[string][2]float64{
				"big1": {2, 2048 * mi}, "big2": {1.9, 2000 * mi}, "small1": {0.1, 200 * mi}, "small2": {0.09, 190 * mi},
			}), at)
		}
		return m, v
	}
	now := t0.Add(30 * time.Minute)

	m, v := learn(true)
	if _, pooled := m.Containers["app"]; pooled {
		t.Errorf("a classed policy learnt a workload-wide state: %v", keys(m))
	}
	classes := m.ClassRecommendations(spec(), v, now)
	if len(classes) != 2 || classes[0].Class != "4cpu-16Gi" || classes[1].Class != "64cpu-256Gi" {
		t.Fatalf("classes %+v, want 4cpu-16Gi then 64cpu-256Gi", classes)
	}
	small, big := classes[0].ContainerRecommendations[0].Target, classes[1].ContainerRecommendations[0].Target
	if small.Cpu().Cmp(*big.Cpu()) >= 0 || small.Memory().Cmp(*big.Memory()) >= 0 {
		t.Errorf("small nodes' target %v not below big nodes' %v", small, big)
	}
	if got := small.Cpu().MilliValue(); got > 500 {
		t.Errorf("small nodes' cpu target %dm, want at most what they have (500m): they use 100m", got)
	}
	if classes[0].Pods != 2 || classes[1].Pods != 2 {
		t.Errorf("pods per class %d and %d, want 2 and 2", classes[0].Pods, classes[1].Pods)
	}
	largest := Largest(classes)
	if len(largest) != 1 || largest[0].Target.Cpu().Cmp(*big.Cpu()) != 0 || largest[0].Target.Memory().Cmp(*big.Memory()) != 0 {
		t.Errorf("largest %+v, want the big nodes' target %v", largest, big)
	}
	if got := m.Recommendation(spec(), all, now); len(got) != 0 {
		t.Errorf("workload-wide recommendation %+v from a classed model, want none", got)
	}
	for _, pv := range v {
		a := m.Advise(Input{Spec: spec(), Pod: pv, Usage: usageOf(now, nil), Now: now})
		cpu := a.Targets["app"].CPU
		raised := cpu != nil && cpu.MilliValue() > 500
		if want := pv.Class == "64cpu-256Gi"; raised != want {
			t.Errorf("%s on %s: cpu target %v, raised %v, want raised %v", pv.Pod.Name, pv.Class, cpu, raised, want)
		}
	}

	pooled, pv := learn(false)
	for _, p := range pv {
		if p.Pod.Name != "small1" {
			continue
		}
		a := pooled.Advise(Input{Spec: spec(), Pod: p, Usage: usageOf(now, nil), Now: now})
		if cpu := a.Targets["app"].CPU; cpu == nil || cpu.MilliValue() <= 500 {
			t.Errorf("without classes small1's cpu target is %v: want the big nodes' raise, which classes avoid", cpu)
		}
	}
}

// TestKeySplitsBack: a state's key gives back its container name and class,
// and the workload's key is the bare name, as checkpoints before classes
// have it.
func TestKeySplitsBack(t *testing.T) {
	for _, tc := range []struct{ name, class, key string }{
		{"app", "", "app"},
		{"app", "m5.large", "app@m5.large"},
		{"_pod", "4cpu-16Gi", "_pod@4cpu-16Gi"},
	} {
		if got := Key(tc.name, tc.class); got != tc.key {
			t.Errorf("Key(%q, %q) = %q, want %q", tc.name, tc.class, got, tc.key)
		}
		if n, c := SplitKey(tc.key); n != tc.name || c != tc.class {
			t.Errorf("SplitKey(%q) = %q, %q", tc.key, n, c)
		}
		if got := ConfigName(tc.key); tc.name == "app" && got != "app" {
			t.Errorf("ConfigName(%q) = %q, want app", tc.key, got)
		}
	}
}

func keys(m *Model) []string {
	var out []string
	for k := range m.Containers {
		out = append(out, k)
	}
	return out
}
