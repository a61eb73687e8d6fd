package report

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/price"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/test/builder"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func running(p *corev1.Pod) corev1.Pod {
	p.Status.Phase = corev1.PodRunning
	return *p
}

func TestGroup(t *testing.T) {
	pods := []corev1.Pod{
		running(builder.Pod("web-7c9f8-a").Namespace("a").Label("pod-template-hash", "7c9f8").Owner("ReplicaSet", "web-7c9f8", "u1").Container(builder.Container("app")).Obj()),
		running(builder.Pod("web-5d4b1-b").Namespace("a").Label("pod-template-hash", "5d4b1").Owner("ReplicaSet", "web-5d4b1", "u2").Container(builder.Container("app")).Obj()),
		running(builder.Pod("db-0").Namespace("a").Owner("StatefulSet", "db", "u3").Container(builder.Container("app")).Obj()),
		running(builder.Pod("loose").Namespace("a").Owner("ReplicaSet", "loose", "u4").Container(builder.Container("app")).Obj()),
		running(builder.Pod("bare").Namespace("b").Container(builder.Container("app")).Obj()),
		*builder.Pod("pending").Namespace("a").Owner("StatefulSet", "db", "u3").Container(builder.Container("app")).Obj(),
	}
	var got []string
	for _, w := range Group(pods) {
		got = append(got, w.Namespace+"/"+w.Kind+"/"+w.Name+":"+string(rune('0'+len(w.Pods))))
	}
	want := []string{"a/Deployment/web:2", "a/ReplicaSet/loose:1", "a/StatefulSet/db:1", "b/Pod/bare:1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("workloads (-want,+got):\n%s", diff)
	}
}

func TestBuild(t *testing.T) {
	pod := func(name, cpu, mem string) corev1.Pod {
		return running(builder.Pod(name).Namespace("a").Label("app", "web").Label("pod-template-hash", "h").Owner("ReplicaSet", "web-h", "u").
			Container(builder.Container("app").Requests(cpu, mem).Limits("2", "1Gi")).Obj())
	}
	workloads := Group([]corev1.Pod{pod("web-h-1", "500m", "512Mi"), pod("web-h-2", "500m", "512Mi")})
	off := v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"},
		Spec: v1alpha1.TailorPolicySpec{TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			UpdatePolicy: &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}},
		Status: v1alpha1.TailorPolicyStatus{Recommendation: &v1alpha1.Recommendation{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{
			ContainerName: "app", Target: builder.List("500m", "300Mi"), LowerBound: builder.List("200m", "300Mi"), UncappedTarget: builder.List("500m", "300Mi"),
		}}}}}
	Match(workloads, []v1alpha1.TailorPolicy{off})
	rows, err := Build(workloads, recommend.DefaultConfig(), 7*24*time.Hour, now, price.Book{Default: price.Example})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	r := rows[0]
	if r.Source != "policy web (Off)" || r.Replicas != 2 {
		t.Errorf("source %q replicas %d", r.Source, r.Replicas)
	}
	// Two replicas, each 300m and 212Mi over.
	if r.SavingsCPU != 0.6 || r.SavingsMemory != 2*212*(1<<20) {
		t.Errorf("savings %v cores, %v bytes; want 0.6 and %d", r.SavingsCPU, r.SavingsMemory, 2*212*(1<<20))
	}
	if want := "peak usage plus margin: cpu needs 200m (the policy's target is 500m for now); memory needs 300Mi"; r.Reason != want {
		t.Errorf("reason %q\nwant %q", r.Reason, want)
	}

	// Sized per node class, the row is the largest class's, and says so.
	off.Status.Recommendation.NodeClasses = []v1alpha1.NodeClassRecommendation{{Class: "m5.large"}, {Class: "m5.4xlarge"}}
	Match(workloads, []v1alpha1.TailorPolicy{off})
	if rows, err = Build(workloads, recommend.DefaultConfig(), 7*24*time.Hour, now, price.Book{Default: price.Example}); err != nil {
		t.Fatal(err)
	}
	if want := "(the largest of 2 node classes, which each pod is sized by)"; len(rows) != 1 || !strings.HasSuffix(rows[0].Reason, want) {
		t.Errorf("rows %+v, want one whose reason ends %q", rows, want)
	}
}

// Without a policy, a history is what tailor's recommender makes of it,
// and the reason gives its p95, peak and throttling.
func TestBuildFromHistory(t *testing.T) {
	p := running(builder.Pod("db-0").Namespace("a").Owner("StatefulSet", "db", "u").Container(builder.Container("app").Requests("1", "1Gi")).Obj())
	workloads := Group([]corev1.Pod{p})
	var h History
	for i := range 7 * 24 * 12 {
		at := now.Add(-7*24*time.Hour + time.Duration(i)*5*time.Minute)
		cpu := 0.1
		if i%100 == 0 {
			cpu = 0.3
		}
		h.CPU = append(h.CPU, Sample{Time: at, Value: cpu})
		h.Memory = append(h.Memory, Sample{Time: at, Value: 200 << 20})
	}
	h.Throttled = 0.03
	workloads[0].History = map[string]*History{"app": &h}
	rows, err := Build(workloads, recommend.DefaultConfig(), 7*24*time.Hour, now, price.Book{Default: price.Example})
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.Source != "history" {
		t.Fatalf("source %q", r.Source)
	}
	cpu, mem := r.Recommended[corev1.ResourceCPU], r.Recommended[corev1.ResourceMemory]
	if cpu.Cmp(resource.MustParse("100m")) <= 0 || cpu.Cmp(resource.MustParse("500m")) >= 0 {
		t.Errorf("cpu recommendation %s for 0.1 cores with 0.3 spikes", cpu.String())
	}
	// The memory request is the last day's peak with no margin
	// (recommend.Config.MemorySplit, the default since issue 26): the
	// margin is the limit's, which is not reserved.
	if mem.Cmp(resource.MustParse("200Mi")) < 0 || mem.Cmp(resource.MustParse("512Mi")) >= 0 {
		t.Errorf("memory recommendation %s for a steady 200Mi", mem.String())
	}
	// The limit recommended apart carries the 256Mi least margin.
	if lim := r.RecommendedLimit[corev1.ResourceMemory]; lim.Cmp(resource.MustParse("456Mi")) < 0 {
		t.Errorf("memory limit recommendation %s for a steady 200Mi, want at least 456Mi", lim.String())
	}
	if want := "p95 CPU 100m, peak 300m over 7d; throttled 3% of periods; memory peak 200Mi"; r.Reason != want {
		t.Errorf("reason %q\nwant %q", r.Reason, want)
	}
	if r.SavingsCPU <= 0.5 || r.SavingsMemory <= 500<<20 {
		t.Errorf("savings %v cores, %v bytes", r.SavingsCPU, r.SavingsMemory)
	}
}

func TestBuildWithNothing(t *testing.T) {
	p := running(builder.Pod("bare").Namespace("a").Container(builder.Container("app").Requests("1", "1Gi")).Obj())
	rows, err := Build(Group([]corev1.Pod{p}), recommend.DefaultConfig(), 7*24*time.Hour, now, price.Book{Default: price.Example})
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; r.Recommended != nil || r.Source != "" || r.SavingsCPU != 0 || r.Reason == "" {
		t.Errorf("row %+v: want no recommendation, no savings, and a reason", r)
	}
}
