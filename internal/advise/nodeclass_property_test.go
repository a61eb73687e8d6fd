package advise

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/propertytest"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/test/builder"
)

// TestClassesAreWorkloadsOfTheirOwn: over generated DaemonSets on up to four
// classes of node, with usage that differs by class and by node (a node
// leading its class by more than twice included), OOM kills and reads a
// source misses, every pod's advice and every class's recommendation are
// exactly what a model fed with that class's pods alone gives: no class
// learns from another, and a class is learnt as any workload is.
func TestClassesAreWorkloadsOfTheirOwn(t *testing.T) {
	stats, cases, seed, took := propertytest.Run(t, 42, runClassCase)
	t.Logf("%d cases (seed %d, stream 42) in %s: %v", cases, seed, took.Round(time.Millisecond), stats)
	propertytest.CheckFloors(t, stats, cases, []propertytest.Floor{
		{Stat: "classes>1", Per10k: 3750, Why: "most cases must have more than one class, or nothing is kept apart"},
		{Stat: "raised", Per10k: 23000, Why: "pods must be raised, or the advice compared is empty"},
		{Stat: "oom-killed", Per10k: 6000, Why: "OOM kills must be drawn, or what a class learns of one is not compared"},
		{Stat: "classes-differ", Per10k: 3600, Why: "classes must come to different targets, or learning them together would pass too"},
	})
}

func runClassCase(seed uint64, stats map[string]int) string {
	r := rand.New(rand.NewPCG(seed, 42))
	classes := 1 + r.IntN(4)
	type member struct {
		pod   *corev1.Pod
		class string
		scale float64
	}
	var members []member
	byClass := map[string][]int{}
	for c := range classes {
		class := fmt.Sprintf("c%d", c)
		scale := []float64{0.05, 0.3, 1, 4}[r.IntN(4)]
		for i := range 1 + r.IntN(4) {
			name := fmt.Sprintf("p%d-%d", c, i)
			w := builder.Pod(name).Namespace("ns").UID(name).Node("n-" + name).
				Container(builder.Container("app").Requests("200m", "256Mi").Limits("", "2Gi"))
			if r.IntN(5) == 0 {
				killed := metav1.NewTime(t0.Add(time.Duration(r.IntN(4)) * time.Minute))
				w.Phase(corev1.PodRunning).ContainerStatus(corev1.ContainerStatus{Name: "app", RestartCount: 1,
					State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: killed}},
				})
				stats["oom-killed"]++
			} else {
				w.Running()
			}
			p := w.Obj()
			byClass[class] = append(byClass[class], len(members))
			members = append(members, member{pod: p, class: class, scale: scale * (0.5 + r.Float64())})
		}
	}
	if classes > 1 {
		stats["classes>1"]++
	}
	// One read sequence for all models.
	reads := 3 + r.IntN(6)
	usage := make([]metrics.Result, reads)
	for i := range usage {
		at := t0.Add(time.Duration(i) * time.Minute)
		u := map[string][2]float64{}
		for _, m := range members {
			if r.IntN(8) == 0 {
				continue // the source missed the pod this read
			}
			u[m.pod.Name] = [2]float64{m.scale * (0.5 + r.Float64()), m.scale * (0.5 + r.Float64()) * 512 * mi}
		}
		usage[i] = usageOf(at, u)
	}
	now := t0.Add(time.Duration(reads) * time.Minute)

	learn := func(idx []int, classed bool) (*Model, []Pod) {
		pods := make([]*corev1.Pod, 0, len(idx))
		for _, i := range idx {
			pods = append(pods, members[i].pod)
		}
		m := NewModel(recommend.DefaultConfig())
		if err := m.Configure(spec(), pods); err != nil {
			panic(err)
		}
		v := views(pods...)
		if classed {
			for k, i := range idx {
				v[k].Class = members[i].class
			}
		}
		for i, u := range usage {
			m.Learn(spec(), v, u, t0.Add(time.Duration(i)*time.Minute))
		}
		return m, v
	}
	all := make([]int, len(members))
	for i := range all {
		all[i] = i
	}
	classedModel, classedViews := learn(all, true)
	got := map[string]Advice{}
	for _, v := range classedViews {
		got[v.Pod.Name] = classedModel.Advise(Input{Spec: spec(), Pod: v, Usage: usage[len(usage)-1], Now: now})
	}
	recs := classedModel.ClassRecommendations(spec(), classedViews, now)
	targets := map[string]string{}
	for _, cr := range recs {
		alone, aloneViews := learn(byClass[cr.Class], false)
		pods := make([]*corev1.Pod, 0, len(aloneViews))
		for _, v := range aloneViews {
			pods = append(pods, v.Pod)
			want := alone.Advise(Input{Spec: spec(), Pod: v, Usage: usage[len(usage)-1], Now: now})
			if diff := cmp.Diff(want.Targets, got[v.Pod.Name].Targets); diff != "" {
				return fmt.Sprintf("pod %s of class %s: targets differ from its class learnt alone (-alone,+classed):\n%s", v.Pod.Name, cr.Class, diff)
			}
			if t := want.Targets["app"]; t.CPU != nil && t.CPU.Cmp(resource.MustParse("200m")) > 0 {
				stats["raised"]++
			}
		}
		if diff := cmp.Diff(alone.Recommendation(spec(), pods, now), cr.ContainerRecommendations); diff != "" {
			return fmt.Sprintf("class %s: recommendation differs from its class learnt alone (-alone,+classed):\n%s", cr.Class, diff)
		}
		if len(cr.ContainerRecommendations) > 0 {
			targets[cr.Class] = cr.ContainerRecommendations[0].Target.Cpu().String()
		}
	}
	seen := map[string]bool{}
	for _, v := range targets {
		seen[v] = true
	}
	if len(seen) > 1 {
		stats["classes-differ"]++
	}
	return ""
}
