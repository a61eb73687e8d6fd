package podchange

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

// podRR renders the pod-level desired resources like rr does containers'.
func podRR(d Decision) string {
	if d.Desired.Pod == nil {
		return ""
	}
	var parts []string
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if v, ok := d.Desired.Pod.Requests[res]; ok {
			parts = append(parts, "req."+string(res)+"="+v.String())
		}
		if v, ok := d.Desired.Pod.Limits[res]; ok {
			parts = append(parts, "lim."+string(res)+"="+v.String())
		}
	}
	return strings.Join(parts, ",")
}

// TestDecideWorkloadShapes covers the shapes beyond the demo's: requests
// only, containers without limits, Guaranteed pods under RequestsOnly and
// pod-level resources. Each case names the promise it holds.
func TestDecideWorkloadShapes(t *testing.T) {
	cases := map[string]struct {
		pod        *corev1.Pod
		spec       *v1alpha1.TailorPolicySpec
		targets    map[string]Target
		podTarget  Target
		workingSet map[string]resource.Quantity
		measured   map[string]jvm.Measured
		room       corev1.ResourceList
		want       map[string]string
		wantPod    string
		wantSkips  []SkipReason
		wantNote   string
	}{
		"requests only follows usage up to the limit": {
			pod:     builder.Pod("p").Container(builder.Container("app").Requests("250m", "128Mi").Limits("3", "256Mi")).Obj(),
			spec:    spec(requestsOnly()),
			targets: map[string]Target{"app": {CPU: q("1500m")}},
			want:    map[string]string{"app": "req.cpu=1500m,lim.cpu=3"},
		},
		"requests only stops just below the limit where reaching it would make the pod Guaranteed": {
			pod:      builder.Pod("p").Container(builder.Container("app").Requests("250m", "256Mi").Limits("500m", "256Mi")).Obj(),
			spec:     spec(requestsOnly()),
			targets:  map[string]Target{"app": {CPU: q("800m")}},
			want:     map[string]string{"app": "req.cpu=499m,lim.cpu=500m"},
			wantNote: "request kept just below the 500m limit: at the limit the pod would become Guaranteed",
		},
		"requests only reaches the limit when another resource keeps the pod Burstable": {
			pod:     builder.Pod("p").Container(builder.Container("app").Requests("250m", "128Mi").Limits("500m", "256Mi")).Obj(),
			spec:    spec(requestsOnly()),
			targets: map[string]Target{"app": {CPU: q("800m")}},
			want:    map[string]string{"app": "req.cpu=500m,lim.cpu=500m"},
		},
		"requests only memory stops just below the limit": {
			pod:        builder.Pod("p").Container(builder.Container("app").Requests("500m", "128Mi").Limits("500m", "256Mi")).Obj(),
			spec:       spec(requestsOnly()),
			targets:    map[string]Target{"app": {Memory: q("1Gi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
			want:       map[string]string{"app": "req.memory=255Mi,lim.memory=256Mi"},
		},
		"requests only on a Guaranteed pod does not lower a request alone": {
			pod:       builder.Pod("p").Container(builder.Container("app").Requests("1", "256Mi").Limits("1", "256Mi")).Obj(),
			spec:      spec(requestsOnly()),
			targets:   map[string]Target{"app": {CPU: q("200m")}},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipQoSChange},
		},
		"requests only: the working-set floor never raises the limit": {
			pod:        builder.Pod("p").Container(builder.Container("app").Requests("250m", "128Mi").Limits("500m", "256Mi")).Obj(),
			spec:       spec(requestsOnly()),
			targets:    map[string]Target{"app": {Memory: q("64Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("250Mi")},
			want:       map[string]string{"app": "req.memory=256Mi,lim.memory=256Mi"},
		},
		"a container without a memory limit keeps its request above the working set": {
			pod:        builder.Pod("p").Container(builder.Container("app").Requests("250m", "400Mi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("100Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("300Mi")},
			want:       map[string]string{"app": "req.memory=330Mi"},
			wantNote:   "kept above working set 300Mi + 10%",
		},
		"a request its working set outgrew is raised to the floor, though the target is within the tolerance": {
			pod:        builder.Pod("p").Container(builder.Container("app").Requests("250m", "195Mi").Limits("500m", "390Mi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("200Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("200Mi")},
			want:       map[string]string{"app": "req.memory=220Mi,lim.memory=440Mi"},
			wantNote:   "kept above working set 200Mi + 10%",
		},
		"a request above its working set holds within the tolerance": {
			pod:        builder.Pod("p").Container(builder.Container("app").Requests("250m", "195Mi").Limits("500m", "390Mi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("200Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("190Mi")},
			want:       map[string]string{},
			wantSkips:  []SkipReason{SkipWithinTolerance},
		},
		"a memory limit is lowered with its request": {
			pod:        builder.Pod("p").Container(builder.Container("app").Command("/app/server").Requests("250m", "512Mi").Limits("500m", "1Gi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("128Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
			want:       map[string]string{"app": "req.memory=128Mi,lim.memory=256Mi"},
		},
		"a JVM's memory limit is lowered no further than its heap's reach": {
			pod: builder.Pod("p").Container(builder.Container("app").Command("java", "-Xmx256m", "-jar", "app.jar").
				Requests("250m", "512Mi").Limits("500m", "1Gi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("128Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
			want:       map[string]string{"app": "req.memory=128Mi,lim.memory=384Mi"},
			wantNote:   "limit kept at the JVM's reach 384Mi (-Xmx256m, a quarter more and 64Mi outside the heap)",
		},
		"a JVM whose heap was sized from its limit at start keeps the limit": {
			pod: builder.Pod("p").Container(builder.Container("app").Command("java", "-XX:MaxRAMPercentage=75.0", "-jar", "app.jar").
				Requests("250m", "512Mi").Limits("500m", "1Gi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("128Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
			want:       map[string]string{"app": "req.memory=128Mi,lim.memory=1Gi"},
			wantNote:   "limit not lowered: the JVM sized its heap from the limit it saw at start (-XX:MaxRAMPercentage=75.0)",
		},
		// 256Mi of heap and 104Mi outside it measured: 360Mi, which the
		// agent's headroom (a tenth of the limit) brings to 400Mi.
		"a JVM's memory limit is lowered no further than the reach the agent measured": {
			pod: builder.Pod("p").Container(builder.Container("app").Command("java", "-Xmx256m", "-jar", "app.jar").
				Requests("250m", "512Mi").Limits("500m", "1Gi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("128Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
			measured:   map[string]jvm.Measured{"app": {HeapMax: 256 << 20, NonHeap: 104 << 20}},
			want:       map[string]string{"app": "req.memory=128Mi,lim.memory=400Mi"},
			wantNote:   "limit kept at the JVM's reach 400Mi (measured: a heap of 256Mi at most, 104Mi outside it)",
		},
		"a JVM whose heap was sized from its limit is lowered to the reach the agent measured": {
			pod: builder.Pod("p").Container(builder.Container("app").Command("java", "-XX:MaxRAMPercentage=75.0", "-jar", "app.jar").
				Requests("250m", "512Mi").Limits("500m", "1Gi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("128Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
			measured:   map[string]jvm.Measured{"app": {HeapMax: 480 << 20, NonHeap: 60 << 20}},
			want:       map[string]string{"app": "req.memory=128Mi,lim.memory=600Mi"},
			wantNote:   "limit kept at the JVM's reach 600Mi (measured: a heap of 480Mi at most, 60Mi outside it)",
		},
		"a JVM's -Xmx above what the agent measured holds its limit": {
			pod: builder.Pod("p").Container(builder.Container("app").Command("java", "-Xmx1g", "-jar", "app.jar").
				Requests("250m", "512Mi").Limits("500m", "1Gi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("128Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
			measured:   map[string]jvm.Measured{"app": {HeapMax: 256 << 20, NonHeap: 104 << 20}},
			want:       map[string]string{"app": "req.memory=128Mi,lim.memory=1Gi"},
			wantNote:   "limit kept at the JVM's reach 1Gi (-Xmx1g in the spec, more than measured)",
		},
		// The container writes the file the agent reads: a claim of a
		// huge heap keeps its own limit where it is, and raises nothing.
		"a JVM claiming a huge heap keeps its limit and is not raised": {
			pod: builder.Pod("p").Container(builder.Container("app").Command("/app/start.sh").
				Requests("250m", "512Mi").Limits("500m", "1Gi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("128Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
			measured:   map[string]jvm.Measured{"app": {HeapMax: 64 << 30, NonHeap: 1 << 30}},
			want:       map[string]string{"app": "req.memory=128Mi,lim.memory=1Gi"},
		},
		"a Guaranteed JVM keeps its request at its limit": {
			pod: builder.Pod("p").Container(builder.Container("app").Command("java", "-Xmx256m", "-jar", "app.jar").
				Requests("500m", "1Gi").Limits("500m", "1Gi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("128Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
			want:       map[string]string{"app": "req.memory=384Mi,lim.memory=384Mi"},
		},
		"a JVM's memory limit is raised as any other": {
			pod: builder.Pod("p").Container(builder.Container("app").Command("java", "-Xmx256m", "-jar", "app.jar").
				Requests("250m", "256Mi").Limits("500m", "512Mi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("400Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("300Mi")},
			want:       map[string]string{"app": "req.memory=400Mi,lim.memory=800Mi"},
		},
		"a container without a limit never gets one": {
			pod:     builder.Pod("p").Container(builder.Container("app").Requests("250m", "128Mi")).Obj(),
			spec:    spec(),
			targets: map[string]Target{"app": {CPU: q("1")}},
			want:    map[string]string{"app": "req.cpu=1"},
		},
		"pod-level resources are sized, no container limit is added": {
			pod: builder.Pod("p").Container(builder.Container("app")).
				PodRequests("500m", "256Mi").PodLimits("1", "512Mi").Obj(),
			spec:      spec(),
			targets:   map[string]Target{"app": {CPU: q("2")}},
			podTarget: Target{CPU: q("2")},
			want:      map[string]string{},
			wantPod:   "req.cpu=2,lim.cpu=4,req.memory=256Mi,lim.memory=512Mi",
		},
		"a Guaranteed pod-level pod keeps pod requests equal to limits": {
			pod: builder.Pod("p").Container(builder.Container("app")).
				PodRequests("1", "512Mi").PodLimits("1", "512Mi").Obj(),
			spec:       spec(),
			podTarget:  Target{Memory: q("1Gi")},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("300Mi")},
			wantPod:    "req.cpu=1,lim.cpu=1,req.memory=1Gi,lim.memory=1Gi",
		},
		"pod requests stay at least the sum of the containers' requests": {
			pod: builder.Pod("p").Container(builder.Container("a").Requests("200m", "")).Container(builder.Container("b").Requests("200m", "")).
				PodRequests("500m", "").Obj(),
			spec:    spec(),
			targets: map[string]Target{"a": {CPU: q("400m")}},
			want:    map[string]string{"a": "req.cpu=400m"},
			wantPod: "req.cpu=600m",
		},
		"pod-level memory is not lowered below the pod's working set": {
			pod: builder.Pod("p").Container(builder.Container("a")).Sidecar(builder.Container("s")).
				PodRequests("", "1Gi").PodLimits("", "2Gi").Obj(),
			spec:       spec(),
			podTarget:  Target{Memory: q("100Mi")},
			workingSet: map[string]resource.Quantity{"a": resource.MustParse("300Mi"), "s": resource.MustParse("100Mi")},
			wantPod:    "req.memory=440Mi,lim.memory=880Mi",
		},
		"pod-level memory is not lowered while a container's working set is unknown": {
			pod: builder.Pod("p").Container(builder.Container("a")).Sidecar(builder.Container("s")).
				PodRequests("", "1Gi").PodLimits("", "2Gi").Obj(),
			spec:       spec(),
			podTarget:  Target{Memory: q("100Mi")},
			workingSet: map[string]resource.Quantity{"a": resource.MustParse("300Mi")},
			wantSkips:  []SkipReason{SkipNoWorkingSet},
		},
		"a pod-level request its containers outgrew is raised to the floor, though the target is within the tolerance": {
			pod: builder.Pod("p").Container(builder.Container("a")).Sidecar(builder.Container("s")).
				PodRequests("", "390Mi").PodLimits("", "780Mi").Obj(),
			spec:       spec(),
			podTarget:  Target{Memory: q("400Mi")},
			workingSet: map[string]resource.Quantity{"a": resource.MustParse("300Mi"), "s": resource.MustParse("100Mi")},
			wantPod:    "req.memory=440Mi,lim.memory=880Mi",
			wantNote:   "kept above working set 400Mi + 10%",
		},
		"a pod-level request above its containers' working sets holds within the tolerance": {
			pod: builder.Pod("p").Container(builder.Container("a")).Sidecar(builder.Container("s")).
				PodRequests("", "390Mi").PodLimits("", "780Mi").Obj(),
			spec:       spec(),
			podTarget:  Target{Memory: q("400Mi")},
			workingSet: map[string]resource.Quantity{"a": resource.MustParse("290Mi"), "s": resource.MustParse("90Mi")},
		},
		"a pod-level raise is cut to the room": {
			pod:       builder.Pod("p").Container(builder.Container("app")).PodRequests("500m", "").PodLimits("1", "").Obj(),
			spec:      spec(),
			podTarget: Target{CPU: q("2")},
			room:      builder.List("500m", "0"),
			wantPod:   "req.cpu=1,lim.cpu=2",
		},
		"a pod-level limit change that restarts a container without its own limit waits for allowRestart": {
			pod: builder.Pod("p").Container(builder.Container("app").ResizePolicy(corev1.ResourceCPU, corev1.RestartContainer)).
				PodRequests("500m", "").PodLimits("1", "").Obj(),
			spec:      spec(),
			podTarget: Target{CPU: q("2")},
			wantSkips: []SkipReason{SkipRestartNotAllowed},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := Decide(Input{Pod: tc.pod, Spec: tc.spec, Targets: tc.targets, PodTarget: tc.podTarget, WorkingSet: tc.workingSet,
				JVM: tc.measured, MemoryFloorHeadroom: 0.1, Room: tc.room, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == nil {
				want = map[string]string{}
			}
			if diff := cmp.Diff(want, rr(d)); diff != "" {
				t.Errorf("containers (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPod, podRR(d)); diff != "" {
				t.Errorf("pod-level (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkips, reasons(d)); diff != "" {
				t.Errorf("skips (-want,+got):\n%s\n%+v", diff, d.Skips)
			}
			if tc.wantNote != "" {
				var notes []string
				for _, ch := range d.All() {
					notes = append(notes, ch.Notes...)
				}
				if !strings.Contains(strings.Join(notes, "\n"), tc.wantNote) {
					t.Errorf("notes %q lack %q", notes, tc.wantNote)
				}
			}
			if in := tc.pod; !d.Empty() {
				assertPlannable(t, in, d)
			}
		})
	}
}

// assertPlannable checks the planner accepts a decision, keeps the QoS class
// and restarts nothing.
func assertPlannable(t *testing.T, pod *corev1.Pod, d Decision) {
	t.Helper()
	plan, err := resize.Plan(resize.Input{Pod: pod, Desired: d.Desired, Server: resize.Version{Major: 1, Minor: 37}})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if plan.Outcome != resize.Accepted {
		t.Fatalf("planner refuses the decision: %s: %s", plan.Rule, plan.Message)
	}
	if plan.QoSBefore != plan.QoSAfter {
		t.Errorf("QoS %s -> %s", plan.QoSBefore, plan.QoSAfter)
	}
}
