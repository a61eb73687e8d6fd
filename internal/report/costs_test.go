package report

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/price"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/test/builder"
)

// Each pod's requests are priced at its node's prices, now and with the
// recommendation in place of each request it sizes; a row without a
// recommendation costs the same after.
func TestBuildCosts(t *testing.T) {
	pod := func(name, node string) corev1.Pod {
		return running(builder.Pod(name).Namespace("a").Node(node).Label("pod-template-hash", "h").Owner("ReplicaSet", "web-h", "u").
			Container(builder.Container("app").Requests("1", "2Gi").Limits("2", "4Gi")).
			// The sidecar requests no memory: none is added, none priced.
			Sidecar(builder.Container("proxy").Requests("500m", "")).
			InitContainer(builder.Container("setup").Requests("4", "8Gi")).Obj())
	}
	bare := running(builder.Pod("bare").Namespace("b").Node("cheap").Container(builder.Container("app").Requests("2", "1Gi")).Obj())
	workloads := Group([]corev1.Pod{pod("web-h-1", "std"), pod("web-h-2", "cheap"), bare})
	pol := v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"},
		Spec: v1alpha1.TailorPolicySpec{TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
		Status: v1alpha1.TailorPolicyStatus{Recommendation: &v1alpha1.Recommendation{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{
			{ContainerName: "app", Target: builder.List("500m", "1Gi"), LowerBound: builder.List("500m", "1Gi")},
			{ContainerName: "proxy", Target: builder.List("100m", "64Mi"), LowerBound: builder.List("100m", "64Mi")},
		}}}}
	Match(workloads, []v1alpha1.TailorPolicy{pol})
	std, cheap := price.Prices{CPUCoreHour: 0.04, MemoryGiBHour: 0.004}, price.Prices{CPUCoreHour: 0.01, MemoryGiBHour: 0.001}
	book := price.Book{Default: std, Nodes: map[string]price.Prices{"cheap": cheap}}
	rows, err := Build(workloads, recommend.DefaultConfig(), 7*24*time.Hour, now, book)
	if err != nil {
		t.Fatal(err)
	}
	const h = price.HoursPerMonth
	type cost struct {
		Workload, Container string
		Before, After       float64
	}
	var got []cost
	for _, r := range rows {
		got = append(got, cost{r.Workload, r.Container, r.MonthlyCostBefore, r.MonthlyCostAfter})
	}
	want := []cost{
		// Sidecars come first, as the pod starts them.
		{"web", "proxy", h * (0.5*0.04 + 0.5*0.01), h * (0.1*0.04 + 0.1*0.01)},
		// app: 1 core and 2Gi -> 500m and 1Gi, once on each node.
		{"web", "app", h * ((0.04 + 2*0.004) + (0.01 + 2*0.001)), h * ((0.5*0.04 + 0.004) + (0.5*0.01 + 0.001))},
		{"bare", "app", h * (2*0.01 + 0.001), h * (2*0.01 + 0.001)},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("costs (-want,+got):\n%s", diff)
	}

	wl, ns, total := Costs(rows)
	if len(wl) != 2 || wl[0].Workload != "web" || len(ns) != 2 || ns[0].Namespace != "a" {
		t.Fatalf("workloads %+v namespaces %+v", wl, ns)
	}
	if d := wl[0].MonthlyCostFreed - (want[0].Before - want[0].After + want[1].Before - want[1].After); math.Abs(d) > 1e-9 {
		t.Errorf("web frees %v", wl[0].MonthlyCostFreed)
	}
	if ns[1].MonthlyCostFreed != 0 || math.Abs(total.MonthlyCostBefore-(want[0].Before+want[1].Before+want[2].Before)) > 1e-9 {
		t.Errorf("namespace b %+v, total %+v", ns[1], total)
	}
}
