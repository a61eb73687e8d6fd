package advise

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/test/builder"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const mi = 1 << 20

func webPod(name, cpu, mem string) *corev1.Pod {
	return builder.Pod(name).Namespace("ns").UID(name).
		Container(builder.Container("app").Requests(cpu, mem).Limits("", mem)).Running().Obj()
}

func views(pods ...*corev1.Pod) []Pod {
	out := make([]Pod, 0, len(pods))
	for _, p := range pods {
		m := NewPodMemory(p)
		out = append(out, Pod{Pod: p, Memory: &m})
	}
	return out
}

func usageOf(at time.Time, byPod map[string][2]float64) metrics.Result {
	r := metrics.Result{Usage: map[metrics.Key]metrics.Usage{}}
	for pod, u := range byPod {
		r.Usage[metrics.Key{Namespace: "ns", Pod: pod, Container: "app"}] = metrics.Usage{Time: at, Window: 30 * time.Second, CPU: u[0], Memory: u[1]}
	}
	return r
}

func spec(bounds ...v1alpha1.ContainerPolicy) *v1alpha1.TailorPolicySpec {
	s := &v1alpha1.TailorPolicySpec{}
	if len(bounds) > 0 {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: bounds}
	}
	return s
}

func configured(t *testing.T, s *v1alpha1.TailorPolicySpec, pods ...*corev1.Pod) *Model {
	t.Helper()
	m := NewModel(recommend.DefaultConfig())
	if err := m.Configure(s, pods); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLearnFeedsOneSamplePerContainerName: every pod of a workload is sized
// alike, so a read teaches each container name the largest of its pods'
// figures, once.
func TestLearnFeedsOneSamplePerContainerName(t *testing.T) {
	cases := map[string]struct {
		usage      map[string][2]float64
		again      bool
		wantFed    time.Time
		wantNames  []string
		wantMemory bool
	}{
		"largest of two pods": {usage: map[string][2]float64{"a": {0.1, 100 * mi}, "b": {0.3, 300 * mi}}, wantFed: t0, wantNames: []string{"app"}, wantMemory: true},
		"no usage":            {usage: map[string][2]float64{}, wantNames: nil},
		"the same read twice": {usage: map[string][2]float64{"a": {0.1, 100 * mi}}, again: true, wantFed: t0, wantNames: []string{"app"}, wantMemory: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, b := webPod("a", "100m", "128Mi"), webPod("b", "100m", "128Mi")
			m := configured(t, spec(), a, b)
			u := usageOf(t0, tc.usage)
			m.Learn(spec(), views(a, b), u, t0)
			if tc.again {
				m.Learn(spec(), views(a, b), u, t0.Add(time.Minute))
			}
			var names []string
			for n, c := range m.Containers {
				if !c.Fed.IsZero() {
					names = append(names, n)
				}
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("names fed (-want,+got):\n%s", diff)
			}
			if c := m.Containers["app"]; c != nil && !c.Fed.Equal(tc.wantFed) {
				t.Errorf("fed at %v, want %v", c.Fed, tc.wantFed)
			}
			rec := m.Recommendation(spec(), []*corev1.Pod{a, b}, t0.Add(time.Minute))
			if got := len(rec) > 0 && !rec[0].UncappedTarget.Memory().IsZero(); got != tc.wantMemory {
				t.Errorf("memory recommended: %v, want %v (%v)", got, tc.wantMemory, rec)
			}
		})
	}
}

// TestLearnOOMKillRaisesMemoryWithoutUsage: an OOM kill in pod status is
// learnt once (the pod's memory moves past it) and raises memory even with
// no usage at all, which never lowers anything.
func TestLearnOOMKillRaisesMemoryWithoutUsage(t *testing.T) {
	killed := metav1.NewTime(t0.Add(-time.Minute))
	p := builder.Pod("a").Namespace("ns").UID("a").Container(builder.Container("app").Requests("100m", "128Mi").Limits("", "128Mi")).
		Phase(corev1.PodRunning).ContainerStatus(corev1.ContainerStatus{Name: "app", RestartCount: 1,
		State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: killed}},
	}).Obj()
	p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	m := configured(t, spec(), p)
	v := views(p)
	m.Learn(spec(), v, metrics.Result{}, t0)
	if !v[0].Memory.LastEvent.Equal(killed.Time) {
		t.Errorf("last event %v, want the kill at %v", v[0].Memory.LastEvent, killed.Time)
	}
	if got := m.Containers["app"].State.LastOOM(); !got.Equal(killed.Time) {
		t.Errorf("last OOM %v, want %v", got, killed.Time)
	}
	a := m.Advise(Input{Spec: spec(), Pod: v[0], Now: t0})
	got := a.Targets["app"]
	if got.Memory == nil || got.Memory.Value() <= 128*mi {
		t.Fatalf("memory target %v, want a raise above 128Mi", got.Memory)
	}
	if got.CPU != nil {
		t.Errorf("cpu target %v without usage, want none", got.CPU)
	}
	if !a.RaiseSince.Equal(killed.Time) {
		t.Errorf("raise evidence since %v, want the kill at %v", a.RaiseSince, killed.Time)
	}
}

// TestAdviseBounds: a request outside the policy's bounds moves to the
// bound; a lowering needs fresh usage.
func TestAdviseBounds(t *testing.T) {
	bounds := v1alpha1.ContainerPolicy{ContainerName: "app",
		MinAllowed: builder.List("200m", ""), MaxAllowed: builder.List("", "64Mi")}
	cases := map[string]struct {
		fresh       bool
		wantCPU     string
		wantMemory  string
		wantRaising bool
	}{
		"fresh usage":    {fresh: true, wantCPU: "200m", wantMemory: "64Mi", wantRaising: true},
		"no fresh usage": {fresh: false, wantCPU: "200m", wantRaising: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := webPod("a", "100m", "128Mi")
			s := spec(bounds)
			m := configured(t, s, p)
			// A state for the name, with nothing to say of its own yet.
			m.container("app")
			u := metrics.Result{}
			if tc.fresh {
				u = usageOf(t0, map[string][2]float64{"a": {0.05, 40 * mi}})
				// The node agent read the container's JVM: the decision
				// gets it beside the working set (podchange.Input.JVM).
				key := metrics.Key{Namespace: "ns", Pod: "a", Container: "app"}
				fig := u.Usage[key]
				fig.JVM = &jvm.Measured{HeapMax: 96 << 20, NonHeap: 30 << 20}
				u.Usage[key] = fig
			}
			a := m.Advise(Input{Spec: s, Pod: views(p)[0], Usage: u, Now: t0})
			got := a.Targets["app"]
			str := func(q interface{ String() string }, isNil bool) string {
				if isNil {
					return ""
				}
				return q.String()
			}
			if diff := cmp.Diff([2]string{tc.wantCPU, tc.wantMemory}, [2]string{str(got.CPU, got.CPU == nil), str(got.Memory, got.Memory == nil)}); diff != "" {
				t.Errorf("targets (-want,+got):\n%s", diff)
			}
			if raising := !a.RaiseSince.IsZero(); raising != tc.wantRaising {
				t.Errorf("raise evidence %v, want %v", raising, tc.wantRaising)
			}
			if _, ok := a.WorkingSet["app"]; ok != tc.fresh {
				t.Errorf("working set known %v, want %v", ok, tc.fresh)
			}
			if j, ok := a.JVM["app"]; ok != tc.fresh || ok && j.HeapMax != 96<<20 {
				t.Errorf("JVM measured %+v (%v), want it with fresh usage only", j, ok)
			}
		})
	}
}

// TestAdviseRaisesARequestItsWorkingSetOutgrew: a recommender with nothing
// to say still leaves a memory request below what the container holds now
// to be raised, from fresh usage only, where the policy sizes the
// container's memory; one above it holds. A target nothing will apply
// would keep the reaction-latency clock running, and a pod resized lately
// synced again at its interval's end, for nothing.
func TestAdviseRaisesARequestItsWorkingSetOutgrew(t *testing.T) {
	cases := map[string]struct {
		workingSet float64
		fresh      bool
		policy     *v1alpha1.ContainerPolicy
		want       string
	}{
		"working set above the request": {workingSet: 150 * mi, fresh: true, want: "150Mi"},
		"working set below the request": {workingSet: 100 * mi, fresh: true},
		"no fresh usage":                {workingSet: 150 * mi},
		"memory not controlled": {workingSet: 150 * mi, fresh: true, policy: &v1alpha1.ContainerPolicy{ContainerName: "app",
			ControlledResources: []corev1.ResourceName{corev1.ResourceCPU}}},
		"container mode Off": {workingSet: 150 * mi, fresh: true, policy: &v1alpha1.ContainerPolicy{ContainerName: "app",
			Mode: ptr.To(v1alpha1.ContainerModeOff)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := webPod("a", "100m", "128Mi")
			s := spec()
			if tc.policy != nil {
				s = spec(*tc.policy)
			}
			m := configured(t, s, p)
			m.container("app")
			u := metrics.Result{}
			if tc.fresh {
				u = usageOf(t0, map[string][2]float64{"a": {0.1, tc.workingSet}})
			}
			a := m.Advise(Input{Spec: s, Pod: views(p)[0], Usage: u, Now: t0})
			got := ""
			if mem := a.Targets["app"].Memory; mem != nil {
				got = mem.String()
			}
			if got != tc.want {
				t.Errorf("memory target %q, want %q", got, tc.want)
			}
			if raising := !a.RaiseSince.IsZero(); raising != (tc.want != "") {
				t.Errorf("raise evidence %v, want %v", raising, tc.want != "")
			}
		})
	}
}

// TestAdviseRaisesAPodLevelRequestItsContainersOutgrew: the pod-level
// memory request is raised alike when its running containers together hold
// more than it, sized by the "*" policy, from fresh usage of every one of
// them only.
func TestAdviseRaisesAPodLevelRequestItsContainersOutgrew(t *testing.T) {
	cases := map[string]struct {
		app, side float64
		sideFresh bool
		policy    *v1alpha1.ContainerPolicy
		want      string
	}{
		"together above the request":  {app: 100 * mi, side: 60 * mi, sideFresh: true, want: "160Mi"},
		"together below the request":  {app: 60 * mi, side: 60 * mi, sideFresh: true},
		"one container's usage stale": {app: 100 * mi, side: 60 * mi},
		"memory not controlled": {app: 100 * mi, side: 60 * mi, sideFresh: true, policy: &v1alpha1.ContainerPolicy{ContainerName: v1alpha1.DefaultContainerName,
			ControlledResources: []corev1.ResourceName{corev1.ResourceCPU}}},
		"mode Off": {app: 100 * mi, side: 60 * mi, sideFresh: true, policy: &v1alpha1.ContainerPolicy{ContainerName: v1alpha1.DefaultContainerName,
			Mode: ptr.To(v1alpha1.ContainerModeOff)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := builder.Pod("a").Namespace("ns").UID("a").PodRequests("200m", "128Mi").PodLimits("", "256Mi").
				Container(builder.Container("app")).Container(builder.Container("side")).Running().Obj()
			s := spec()
			if tc.policy != nil {
				s = spec(*tc.policy)
			}
			m := configured(t, s, p)
			m.container(podcontainers.PodLevelName)
			u := metrics.Result{Usage: map[metrics.Key]metrics.Usage{
				{Namespace: "ns", Pod: "a", Container: "app"}: {Time: t0, Window: 30 * time.Second, CPU: 0.1, Memory: tc.app},
			}}
			if tc.sideFresh {
				u.Usage[metrics.Key{Namespace: "ns", Pod: "a", Container: "side"}] = metrics.Usage{Time: t0, Window: 30 * time.Second, CPU: 0.1, Memory: tc.side}
			}
			a := m.Advise(Input{Spec: s, Pod: views(p)[0], Usage: u, Now: t0})
			got := ""
			if mem := a.PodTarget.Memory; mem != nil {
				got = mem.String()
			}
			if got != tc.want {
				t.Errorf("pod-level memory target %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAdviseWithoutStartupBoostLeavesBoostNil: the decision tells "no boost"
// from "nothing boosted" by nil.
func TestAdviseWithoutStartupBoostLeavesBoostNil(t *testing.T) {
	p := webPod("a", "100m", "128Mi")
	m := configured(t, spec(), p)
	a := m.Advise(Input{Spec: spec(), Pod: views(p)[0], Now: t0})
	if a.Boost != nil || a.BoostRaise != nil || a.NotBoosted != nil {
		t.Errorf("boost %v, raise %v, not boosted %v: want all nil", a.Boost, a.BoostRaise, a.NotBoosted)
	}
}

// TestRecommendationIsSortedBoundedAndFedOnly: status lists only what was
// learnt from usage, by name, within the policy's bounds, with the
// recommender's own figure as the uncapped target.
func TestRecommendationIsSortedBoundedAndFedOnly(t *testing.T) {
	p := builder.Pod("a").Namespace("ns").UID("a").
		Container(builder.Container("app").Requests("100m", "128Mi")).
		Container(builder.Container("side").Requests("100m", "128Mi")).Running().Obj()
	s := spec(v1alpha1.ContainerPolicy{ContainerName: "app", MaxAllowed: builder.List("", "100Mi")})
	m := configured(t, s, p)
	m.container("never-fed")
	u := metrics.Result{Usage: map[metrics.Key]metrics.Usage{
		{Namespace: "ns", Pod: "a", Container: "side"}: {Time: t0, Window: 30 * time.Second, CPU: 0.1, Memory: 500 * mi},
		{Namespace: "ns", Pod: "a", Container: "app"}:  {Time: t0, Window: 30 * time.Second, CPU: 0.1, Memory: 500 * mi},
	}}
	m.Learn(s, views(p), u, t0)
	rec := m.Recommendation(s, []*corev1.Pod{p}, t0)
	var names []string
	for _, r := range rec {
		names = append(names, r.ContainerName)
	}
	if diff := cmp.Diff([]string{"app", "side"}, names); diff != "" {
		t.Fatalf("names (-want,+got):\n%s", diff)
	}
	if got := rec[0].Target.Memory(); got.Cmp(builder.List("", "100Mi")[corev1.ResourceMemory]) != 0 {
		t.Errorf("app memory target %v, want maxAllowed 100Mi", got)
	}
	if got := rec[0].UncappedTarget.Memory(); got.Value() <= 100*mi {
		t.Errorf("app uncapped memory %v, want the recommender's figure above 100Mi", got)
	}
	if got := rec[1].Target.Memory(); got.Value() <= 100*mi {
		t.Errorf("side memory target %v, want it unbounded", got)
	}
}

// TestConfigureCarriesStateOverAndRefusesBadOverrides.
func TestConfigureCarriesStateOverAndRefusesBadOverrides(t *testing.T) {
	p := webPod("a", "100m", "128Mi")
	m := configured(t, spec(), p)
	m.Learn(spec(), views(p), usageOf(t0, map[string][2]float64{"a": {0.1, 100 * mi}}), t0)
	window := metav1.Duration{Duration: 2 * time.Hour}
	changed := spec(v1alpha1.ContainerPolicy{ContainerName: "*", Recommender: &v1alpha1.RecommenderOverrides{CPUWindow: &window}})
	if err := m.Configure(changed, []*corev1.Pod{p}); err != nil {
		t.Fatal(err)
	}
	if got := m.Configs["app"].CPUWindow; got != window.Duration {
		t.Errorf("cpu window %v, want %v", got, window.Duration)
	}
	if c := m.Containers["app"]; c == nil || !c.Fed.Equal(t0) {
		t.Errorf("learnt state lost over a configuration change: %+v", c)
	}
	negative := int32(-5)
	bad := spec(v1alpha1.ContainerPolicy{ContainerName: "app", Recommender: &v1alpha1.RecommenderOverrides{CPUHeadroomPercent: &negative}})
	var cfgErr *ConfigError
	if err := m.Configure(bad, []*corev1.Pod{p}); !errors.As(err, &cfgErr) {
		t.Errorf("a bad override: %v, want a ConfigError", err)
	}
}

// TestRestoreAndForgetStale: a checkpoint entry comes back as it was
// encoded; a name nothing fed for longer than its windows is forgotten.
func TestRestoreAndForgetStale(t *testing.T) {
	p := webPod("a", "100m", "128Mi")
	m := configured(t, spec(), p)
	m.Learn(spec(), views(p), usageOf(t0, map[string][2]float64{"a": {0.1, 100 * mi}}), t0)
	b, err := m.Containers["app"].State.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	back := NewModel(recommend.DefaultConfig())
	if err := back.Restore(spec(), "app", b, t0); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m.Recommendation(spec(), []*corev1.Pod{p}, t0), back.Recommendation(spec(), []*corev1.Pod{p}, t0)); diff != "" {
		t.Errorf("restored recommendation (-want,+got):\n%s", diff)
	}
	if err := back.Restore(spec(), podcontainers.PodLevelName, []byte("not a state"), t0); err == nil || errors.Is(err, ErrUnusable) {
		t.Errorf("a corrupt entry: %v, want a decoding error", err)
	}
	cfg := back.Configs["app"]
	if gone := back.ForgetStale(t0.Add(max(cfg.CPUWindow, cfg.MemoryWindow))); len(gone) != 0 {
		t.Errorf("forgot %v within its windows", gone)
	}
	if diff := cmp.Diff([]string{"app"}, back.ForgetStale(t0.Add(max(cfg.CPUWindow, cfg.MemoryWindow)+time.Second))); diff != "" {
		t.Errorf("forgotten (-want,+got):\n%s", diff)
	}
}

// TestAdviseEarly: an idle pod's lowering, held by the stabilization
// window, is advised early (what room made for a pod of higher priority
// may lower it to), from fresh usage only, while its targets stay empty.
func TestAdviseEarly(t *testing.T) {
	cases := map[string]struct {
		fresh     bool
		wantEarly string
	}{
		// 1 core at 50m used: a 75% step, to 250m.
		"fresh usage":    {fresh: true, wantEarly: "250m"},
		"no fresh usage": {fresh: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := webPod("a", "1", "256Mi")
			s := spec()
			m := configured(t, s, p)
			u := usageOf(t0, map[string][2]float64{"a": {0.05, 200 * mi}})
			m.Learn(s, views(p), u, t0)
			if !tc.fresh {
				u = metrics.Result{}
			}
			a := m.Advise(Input{Spec: s, Pod: views(p)[0], Usage: u, Now: t0})
			if got := a.Targets["app"]; got.CPU != nil {
				t.Errorf("cpu target %s inside the stabilization window, want none", got.CPU)
			}
			var got string
			if e, ok := a.Early["app"]; ok && e.CPU != nil {
				got = e.CPU.String()
			}
			if got != tc.wantEarly {
				t.Errorf("early cpu %q, want %q", got, tc.wantEarly)
			}
		})
	}
}
