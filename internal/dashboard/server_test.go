package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/observation"
	"github.com/tailorhq/tailor/internal/price"
	"github.com/tailorhq/tailor/internal/shard"
	"github.com/tailorhq/tailor/test/builder"
)

func newServer(t *testing.T) (*httptest.Server, *History) {
	t.Helper()
	return newShardServer(t, shard.Shard{})
}

// newShardServer is newServer on a manager of sh.
func newShardServer(t *testing.T, sh shard.Shard) (*httptest.Server, *History) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	pol := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: v1alpha1.TailorPolicySpec{TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
	pol.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Synced"}}
	pol.Status.Recommendation = &v1alpha1.Recommendation{NodeClasses: []v1alpha1.NodeClassRecommendation{
		{Class: "4cpu-16Gi", Pods: 1, ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: "app", Target: builder.List("100m", "64Mi")}}},
		{Class: "64cpu-256Gi", Pods: 3, ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: "app", Target: builder.List("2", "1Gi")}}},
	}}
	// n1 is priced by its own annotations, below the flags' example.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{price.CPUKey: "0.02", price.MemoryKey: "0.002"}}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}}
	pod := builder.Pod("web-1").Namespace("ns").Node("n1").Container(builder.Container("app").Requests("300m", "256Mi")).Running().Obj()
	other := builder.Pod("db-1").Namespace("ns").Node("n1").Container(builder.Container("db").Requests("1", "1Gi")).Running().Obj()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pol, node, pod, other).Build()
	h := NewHistory(10, time.Second)
	s := &Server{Cache: c, History: h, Clock: clocktesting.NewFakePassiveClock(t0.Add(time.Minute)), Shard: sh, Prices: price.Example, ExamplePrices: true}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, h
}

func getJSON(t *testing.T, url string, into any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusOK && into != nil {
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func TestServer(t *testing.T) {
	srv, h := newServer(t)
	var ov Overview
	getJSON(t, srv.URL+"/api/overview", &ov)
	if len(ov.Policies) != 1 || ov.Policies[0].Observed || ov.Policies[0].Target != "deployment/web" {
		t.Fatalf("before any sync: %+v", ov.Policies)
	}

	nan := math.NaN()
	h.Observe(key, observation.Observation{Time: t0, Containers: []observation.ContainerObservation{{Name: "app", CPU: 0.1, CPURequest: 0.3, CPULimit: nan, CPUTarget: 0.2,
		Memory: 100 << 20, MemoryRequest: 256 << 20, MemoryLimit: nan, MemoryTarget: 200 << 20}},
		Pods: []observation.PodObservation{{Name: "web-1", Node: "n1", CPURequest: 0.3, MemoryRequest: 256 << 20, CPUBefore: 0.5, MemoryBefore: 512 << 20, BeforeKnown: true}}})
	h.Resized(key, observation.ResizeMark{Time: t0, Pod: "web-1", Generation: 2, Result: "Done", Change: "cpu 500m->300m"})
	h.Resized(key, observation.ResizeMark{Time: t0.Add(-2 * time.Hour), Pod: "web-1", Generation: 1, Result: "Done"})

	getJSON(t, srv.URL+"/api/overview", &ov)
	p := ov.Policies[0]
	if !p.Observed || p.Pods != 1 || p.CPUBefore != 0.5 || p.CPUNow != 0.3 || p.MemoryBefore != 512<<20 || p.ResizesHour != 1 || p.ResizesDay != 2 || p.Ready != "True Synced" {
		t.Errorf("overview %+v", p)
	}

	// 500m and 512Mi before, 300m and 256Mi now, at n1's prices.
	wantBefore, wantNow := price.HoursPerMonth*(0.5*0.02+0.5*0.002), price.HoursPerMonth*(0.3*0.02+0.25*0.002)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(p.CostBefore, wantBefore) || !near(p.CostNow, wantNow) || !near(ov.Totals.CostBefore, wantBefore) || !near(ov.Totals.CostNow, wantNow) {
		t.Errorf("costs: policy %v -> %v, totals %v -> %v; want %v -> %v", p.CostBefore, p.CostNow, ov.Totals.CostBefore, ov.Totals.CostNow, wantBefore, wantNow)
	}
	if len(ov.Namespaces) != 1 || ov.Namespaces[0].Namespace != "ns" || ov.Namespaces[0].Policies != 1 || !near(ov.Namespaces[0].CostNow, wantNow) {
		t.Errorf("namespaces %+v", ov.Namespaces)
	}
	if !ov.Prices.Example || ov.Prices.Nodes["n1"] != (price.Prices{CPUCoreHour: 0.02, MemoryGiBHour: 0.002}) {
		t.Errorf("prices %+v", ov.Prices)
	}

	var w Workload
	getJSON(t, srv.URL+"/api/workload/ns/web", &w)
	if len(w.Pods) == 1 && (!near(w.Pods[0].CostBefore, wantBefore) || !near(w.Pods[0].CostNow, wantNow) || !near(w.Summary.CostNow, wantNow)) {
		t.Errorf("workload costs: pod %+v, summary %+v", w.Pods[0], w.Summary)
	}
	if len(w.Series) != 1 || len(w.Series[0].Time) != 1 || len(w.Marks) != 2 || len(w.Pods) != 1 || w.Pods[0].CPUBefore != 0.5 {
		t.Errorf("workload %+v", w)
	}
	if len(w.NodeClasses) != 2 || w.NodeClasses[1].Class != "64cpu-256Gi" || w.NodeClasses[1].Pods != 3 {
		t.Errorf("workload's node classes %+v, want status's two", w.NodeClasses)
	}
	if code := getJSON(t, srv.URL+"/api/workload/ns/nope", nil); code != http.StatusNotFound {
		t.Errorf("unknown policy: %d, want 404", code)
	}

	var cl Cluster
	getJSON(t, srv.URL+"/api/cluster", &cl)
	if len(cl.Nodes) != 1 {
		t.Fatalf("cluster %+v", cl)
	}
	n := cl.Nodes[0]
	// Requested now: 300m + 1 core; before: web-1 at its template's 500m.
	if n.Pods != 2 || n.Managed != 1 || math.Abs(n.CPURequested-1.3) > 1e-9 || math.Abs(n.CPUBefore-1.5) > 1e-9 || math.Abs(cl.CPUNodesFreed-0.05) > 1e-9 {
		t.Errorf("node %+v, nodes freed %v", n, cl.CPUNodesFreed)
	}

	// The pages and their assets come from the binary, with a policy that
	// keeps them to their own origin.
	for _, path := range []string{"/", "/cluster", "/workload/ns/web", "/static/app.js", "/static/vendor/uPlot.iife.min.js"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) == 0 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("%s: %d, %d bytes, CSP %q", path, resp.StatusCode, len(body), resp.Header.Get("Content-Security-Policy"))
		}
	}
	resp, err := http.Post(srv.URL+"/api/overview", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405: the dashboard is read-only", resp.StatusCode)
	}
}

// A manager of one shard shows its own namespaces' policies, and sends to
// the right shard's dashboard for the others'.
func TestServerShowsItsShard(t *testing.T) {
	owner := shard.Of("ns", 2)
	for _, tc := range []struct {
		index        int
		wantPolicies int
		wantCode     int
	}{{owner, 1, http.StatusOK}, {1 - owner, 0, http.StatusNotFound}} {
		srv, _ := newShardServer(t, shard.Shard{Index: tc.index, Count: 2})
		var ov Overview
		getJSON(t, srv.URL+"/api/overview", &ov)
		if len(ov.Policies) != tc.wantPolicies {
			t.Errorf("shard %d lists %d policies, want %d", tc.index, len(ov.Policies), tc.wantPolicies)
		}
		resp, err := http.Get(srv.URL + "/api/workload/ns/web")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tc.wantCode {
			t.Errorf("shard %d: workload ns/web answered %d, want %d", tc.index, resp.StatusCode, tc.wantCode)
		}
		if tc.wantCode == http.StatusNotFound && !strings.Contains(string(body), fmt.Sprintf("synced by shard %d of 2", owner)) {
			t.Errorf("shard %d: %q does not name the shard to ask", tc.index, body)
		}
	}
}

// A manager scoped to other namespaces lists none of ns's policies and
// says which namespaces it does show.
func TestServerShowsItsNamespaces(t *testing.T) {
	cases := map[string]struct {
		namespaces   []string
		wantPolicies int
		wantCode     int
		wantBody     string
	}{
		"its own":   {namespaces: []string{"other", "ns"}, wantPolicies: 1, wantCode: http.StatusOK},
		"another's": {namespaces: []string{"team-a", "team-b"}, wantCode: http.StatusNotFound, wantBody: "namespace ns is not one of this manager's namespaces (team-a, team-b)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, _ := newShardServer(t, shard.Shard{Namespaces: tc.namespaces})
			var ov Overview
			getJSON(t, srv.URL+"/api/overview", &ov)
			if len(ov.Policies) != tc.wantPolicies {
				t.Errorf("lists %d policies, want %d", len(ov.Policies), tc.wantPolicies)
			}
			resp, err := http.Get(srv.URL + "/api/workload/ns/web")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Errorf("workload ns/web answered %d, want %d", resp.StatusCode, tc.wantCode)
			}
			if !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("%q does not say %q", body, tc.wantBody)
			}
		})
	}
}
