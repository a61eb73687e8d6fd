package podchange

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/builder/policyspec"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

var (
	spec            = policyspec.New
	containerPolicy = policyspec.ContainerPolicy
	requestsOnly    = policyspec.RequestsOnly
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func ptr[T any](v T) *T { return &v }

// rr renders a container's desired resources compactly for comparison.
func rr(d Decision) map[string]string {
	out := map[string]string{}
	for name, r := range d.Desired.Containers {
		var parts []string
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if v, ok := r.Requests[res]; ok {
				parts = append(parts, "req."+string(res)+"="+v.String())
			}
			if v, ok := r.Limits[res]; ok {
				parts = append(parts, "lim."+string(res)+"="+v.String())
			}
		}
		out[name] = strings.Join(parts, ",")
	}
	return out
}

func reasons(d Decision) []SkipReason {
	var out []SkipReason
	for _, s := range d.Skips {
		out = append(out, s.Reason)
	}
	return out
}

func burstable() *builder.ContainerWrapper {
	return builder.Container("app").Requests("250m", "128Mi").Limits("500m", "256Mi")
}

func TestDecide(t *testing.T) {
	cases := map[string]struct {
		pod        *corev1.Pod
		spec       *v1alpha1.TailorPolicySpec
		targets    map[string]Target
		workingSet map[string]resource.Quantity
		lastResize time.Time
		room       corev1.ResourceList
		want       map[string]string
		wantShort  []string
		wantSkips  []SkipReason
		wantRetry  time.Duration
		wantErr    string
	}{
		"the target sizes the request; the limit keeps its ratio": {
			pod: builder.Pod("p").Container(burstable()).Obj(), spec: spec(),
			targets: map[string]Target{"app": {CPU: q("1")}},
			want:    map[string]string{"app": "req.cpu=1,lim.cpu=2"},
		},
		"requests only is capped at the unchanged limit": {
			pod: builder.Pod("p").Container(burstable()).Obj(),
			spec: spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*",
				ControlledValues: ptr(v1alpha1.ControlledValuesRequestsOnly)})),
			targets: map[string]Target{"app": {CPU: q("800m")}},
			want:    map[string]string{"app": "req.cpu=500m,lim.cpu=500m"},
		},
		"guaranteed keeps requests equal to limits": {
			pod:     builder.Pod("p").Container(builder.Container("app").Requests("500m", "256Mi").Limits("500m", "256Mi")).Obj(),
			spec:    spec(),
			targets: map[string]Target{"app": {CPU: q("1")}},
			want:    map[string]string{"app": "req.cpu=1,lim.cpu=1"},
		},
		"a restart the policy does not allow is skipped": {
			pod:        builder.Pod("p").Container(burstable().ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {CPU: q("1"), Memory: q("512Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
			want:       map[string]string{"app": "req.cpu=1,lim.cpu=2"},
			wantSkips:  []SkipReason{SkipRestartNotAllowed},
		},
		"a restart the policy allows goes ahead": {
			pod:        builder.Pod("p").Container(burstable().ResizePolicy(corev1.ResourceMemory, corev1.RestartContainer)).Obj(),
			spec:       spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "app", AllowRestart: ptr(true)})),
			targets:    map[string]Target{"app": {Memory: q("512Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("100Mi")},
			want:       map[string]string{"app": "req.memory=512Mi,lim.memory=1Gi"},
		},
		"memory never below working set plus headroom, the limit keeping its ratio": {
			pod:        builder.Pod("p").Container(builder.Container("app").Requests("250m", "256Mi").Limits("500m", "512Mi")).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {Memory: q("64Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("200Mi")},
			want:       map[string]string{"app": "req.memory=220Mi,lim.memory=440Mi"},
		},
		"memory is not lowered without a working set": {
			pod:       builder.Pod("p").Container(burstable()).Obj(),
			spec:      spec(),
			targets:   map[string]Target{"app": {Memory: q("64Mi")}},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipNoWorkingSet},
		},
		"memory may rise without a working set": {
			pod:     builder.Pod("p").Container(burstable()).Obj(),
			spec:    spec(),
			targets: map[string]Target{"app": {Memory: q("512Mi")}},
			want:    map[string]string{"app": "req.memory=512Mi,lim.memory=1Gi"},
		},
		"maxAllowed caps the target": {
			pod: builder.Pod("p").Container(burstable()).Obj(),
			spec: spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*",
				MaxAllowed: builder.List("1", "")})),
			targets: map[string]Target{"app": {CPU: q("5")}},
			want:    map[string]string{"app": "req.cpu=1,lim.cpu=2"},
		},
		"minAllowed floors the target": {
			pod: builder.Pod("p").Container(burstable()).Obj(),
			spec: spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*",
				MinAllowed: builder.List("200m", "")})),
			targets: map[string]Target{"app": {CPU: q("10m")}},
			want:    map[string]string{"app": "req.cpu=200m,lim.cpu=400m"},
		},
		"scale-up step limit": {
			pod: builder.Pod("p").Container(burstable()).Obj(),
			spec: spec(func(s *v1alpha1.TailorPolicySpec) {
				s.Behavior = &v1alpha1.Behavior{ScaleUp: &v1alpha1.ScaleUpRules{MaxStepPercent: ptr(int32(50))}}
			}),
			targets: map[string]Target{"app": {CPU: q("2")}},
			want:    map[string]string{"app": "req.cpu=375m,lim.cpu=750m"},
		},
		"scale-down step limit": {
			pod: builder.Pod("p").Container(burstable()).Obj(),
			spec: spec(func(s *v1alpha1.TailorPolicySpec) {
				s.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{MaxStepPercent: ptr(int32(20))}}
			}),
			targets: map[string]Target{"app": {CPU: q("10m")}},
			want:    map[string]string{"app": "req.cpu=200m,lim.cpu=400m"},
		},
		"a change within tolerance is not worth a resize": {
			pod:       builder.Pod("p").Container(builder.Container("app").Requests("1", "128Mi").Limits("2", "256Mi")).Obj(),
			spec:      spec(),
			targets:   map[string]Target{"app": {CPU: q("1040m")}},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipWithinTolerance},
		},
		"updateMode Off only recommends": {
			pod: builder.Pod("p").Container(burstable()).Obj(),
			spec: spec(func(s *v1alpha1.TailorPolicySpec) {
				s.UpdatePolicy = &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}
			}),
			targets:   map[string]Target{"app": {CPU: q("1")}},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipPolicyOff},
		},
		"a BestEffort pod is left alone": {
			pod:       builder.Pod("p").Container(builder.Container("app")).Obj(),
			spec:      spec(),
			targets:   map[string]Target{"app": {CPU: q("1")}},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipBestEffort},
		},
		"resized too recently": {
			pod:        builder.Pod("p").Container(burstable()).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {CPU: q("1")}},
			lastResize: now.Add(-20 * time.Second),
			want:       map[string]string{},
			wantSkips:  []SkipReason{SkipTooSoon},
			wantRetry:  40 * time.Second,
		},
		"resized recently, nothing to change: no retry that would bring the policy back": {
			pod:        builder.Pod("p").Container(burstable()).Obj(),
			spec:       spec(),
			targets:    map[string]Target{},
			lastResize: now.Add(-20 * time.Second),
			want:       map[string]string{},
		},
		"container mode Off": {
			pod:       builder.Pod("p").Container(burstable()).Obj(),
			spec:      spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "app", Mode: ptr(v1alpha1.ContainerModeOff)})),
			targets:   map[string]Target{"app": {CPU: q("1")}},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipContainerModeOff},
		},
		"a resource without a request is not added": {
			pod:       builder.Pod("p").Container(builder.Container("app").Requests("250m", "")).Obj(),
			spec:      spec(),
			targets:   map[string]Target{"app": {Memory: q("256Mi")}},
			want:      map[string]string{},
			wantSkips: []SkipReason{SkipNotRequested},
		},
		"a raise that fits the room is sent whole": {
			pod: builder.Pod("p").Container(burstable()).Obj(), spec: spec(),
			targets: map[string]Target{"app": {CPU: q("500m")}},
			room:    builder.List("250m", "0"),
			want:    map[string]string{"app": "req.cpu=500m,lim.cpu=1"},
		},
		"a raise beyond the room is cut to it, keeping the ratio": {
			pod: builder.Pod("p").Container(burstable()).Obj(), spec: spec(),
			targets:   map[string]Target{"app": {CPU: q("2")}},
			room:      builder.List("250m", "0"),
			want:      map[string]string{"app": "req.cpu=500m,lim.cpu=1"},
			wantShort: []string{"app cpu wanted 2 got 500m room 250m"},
		},
		"a guaranteed raise is cut with requests equal to limits": {
			pod:       builder.Pod("p").Container(builder.Container("app").Requests("500m", "256Mi").Limits("500m", "256Mi")).Obj(),
			spec:      spec(),
			targets:   map[string]Target{"app": {Memory: q("1Gi")}},
			room:      builder.List("0", "100Mi"),
			want:      map[string]string{"app": "req.memory=356Mi,lim.memory=356Mi"},
			wantShort: []string{"app memory wanted 1Gi got 356Mi room 100Mi"},
		},
		"no room at all skips the raise as NodeFull and keeps a lowering": {
			pod:        builder.Pod("p").Container(burstable()).Obj(),
			spec:       spec(),
			targets:    map[string]Target{"app": {CPU: q("2"), Memory: q("64Mi")}},
			workingSet: map[string]resource.Quantity{"app": resource.MustParse("50Mi")},
			room:       builder.List("10m", "0"),
			want:       map[string]string{"app": "req.memory=64Mi,lim.memory=128Mi"},
			wantSkips:  []SkipReason{SkipNoRoom},
			wantShort:  []string{"app cpu wanted 2 got 250m room 10m"},
		},
		"room is shared out in container order": {
			pod: builder.Pod("p").Container(builder.Container("a").Requests("100m", "")).
				Container(builder.Container("b").Requests("100m", "")).Obj(),
			spec:      spec(),
			targets:   map[string]Target{"a": {CPU: q("300m")}, "b": {CPU: q("300m")}},
			room:      builder.List("300m", "0"),
			want:      map[string]string{"a": "req.cpu=300m", "b": "req.cpu=200m"},
			wantShort: []string{"b cpu wanted 300m got 200m room 100m"},
		},
		"sidecars are autoscaled, classic init containers are not": {
			pod: builder.Pod("p").InitContainer(builder.Container("setup").Requests("100m", "")).
				Sidecar(builder.Container("proxy").Requests("100m", "")).Container(burstable()).Obj(),
			spec:    spec(),
			targets: map[string]Target{"proxy": {CPU: q("200m")}, "setup": {CPU: q("1")}},
			wantErr: `no running container "setup"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := Decide(Input{Pod: tc.pod, Spec: tc.spec, Targets: tc.targets, WorkingSet: tc.workingSet,
				MemoryFloorHeadroom: 0.1, LastResize: tc.lastResize, Room: tc.room, Now: now})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rr(d)); diff != "" {
				t.Errorf("desired (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkips, reasons(d)); diff != "" {
				t.Errorf("skips (-want,+got):\n%s\n%+v", diff, d.Skips)
			}
			var short []string
			for _, s := range d.Short {
				short = append(short, fmt.Sprintf("%s %s wanted %s got %s room %s", s.Container, s.Resource, s.Wanted.String(), s.Got.String(), s.Room.String()))
			}
			if diff := cmp.Diff(tc.wantShort, short); diff != "" {
				t.Errorf("shortfalls (-want,+got):\n%s", diff)
			}
			if d.RetryAfter != tc.wantRetry {
				t.Errorf("RetryAfter = %s, want %s", d.RetryAfter, tc.wantRetry)
			}
			if d.Empty() != (len(tc.want) == 0) {
				t.Errorf("Empty() = %v with desired %v", d.Empty(), tc.want)
			}
		})
	}
}

func TestSidecarIsAutoscaled(t *testing.T) {
	pod := builder.Pod("p").Sidecar(builder.Container("proxy").Requests("100m", "")).Container(burstable()).Obj()
	d, err := Decide(Input{Pod: pod, Spec: spec(), Targets: map[string]Target{"proxy": {CPU: q("200m")}}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"proxy": "req.cpu=200m"}, rr(d)); diff != "" {
		t.Errorf("desired (-want,+got):\n%s", diff)
	}
}

// TestDecideCutFitsTheRoom: a raise cut to the room left is cut to whole
// MiB below it, even when the room is a byte short of a whole MiB (a node's
// allocatable seldom is one): the float noise allowance of floorQuantity
// rounded such a room up, and a new pod of a DaemonSet was planned a byte
// larger than its node had free (found by the fuzz of DecideSync).
func TestDecideCutFitsTheRoom(t *testing.T) {
	pod := builder.Pod("p").Container(builder.Container("app").Requests("100m", "1Gi")).Obj()
	for _, room := range []int64{1206<<20 - 1, 1206 << 20, 1206<<20 + 1, 1206<<20 - 1<<19} {
		d, err := Decide(Input{Pod: pod, Spec: spec(), Targets: map[string]Target{"app": {Memory: q("3Gi")}}, Now: now, Creating: true,
			Room: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(room, resource.BinarySI)}})
		if err != nil {
			t.Fatal(err)
		}
		got := d.Desired.Containers["app"].Requests[corev1.ResourceMemory]
		if most := 1<<30 + room; got.Value() > most || got.Value() < most-1<<20 {
			t.Errorf("room %d bytes: raised to %s (%d bytes), want the most whole MiB within %d bytes", room, got.String(), got.Value(), most)
		}
	}
}

// TestDecideKeepsQoSWithinMinAllowed: a Burstable pod whose every request
// would reach its limit stays Burstable by a request kept just below its
// limit; not one that minAllowed is just at, while another serves: every
// request at its limit was kept below, one to a MiB under minAllowed (found
// by the fuzz of DecideSync).
// TestDecideDropsWhatOnlyMinAllowedKeepsBurstable: a Burstable pod whose
// cpu request equals its limit, and whose memory would land at a limit a
// LimitRange's maxLimitRequestRatio of 1 holds to the request, could stay
// Burstable only with memory just under minAllowed. Both are promises: the
// memory change is not made, and the skip says why.
func TestDecideDropsWhatOnlyMinAllowedKeepsBurstable(t *testing.T) {
	pod := builder.Pod("p").Container(builder.Container("c").Requests("10m", "1Gi").Limits("10m", "4Gi")).Obj()
	s := spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
		MinAllowed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		MaxAllowed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}))
	ratio := &nsrules.Rules{LimitRanges: []corev1.LimitRange{{ObjectMeta: metav1.ObjectMeta{Name: "lr"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1")}}}}}}}
	d, err := Decide(Input{Pod: pod, Spec: s, Now: now, MemoryFloorHeadroom: 0.1, Rules: ratio,
		Targets:    map[string]Target{"c": {Memory: q("100Mi")}},
		WorkingSet: map[string]resource.Quantity{"c": resource.MustParse("10Mi")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rr(d); len(got) != 0 {
		t.Errorf("desired %v, want nothing: memory at 127Mi is under minAllowed, at 128Mi the pod is Guaranteed", got)
	}
	var skipped bool
	for _, sk := range d.Skips {
		if sk.Reason == SkipQoSChange && sk.Resource == corev1.ResourceMemory && strings.Contains(sk.Message, "minAllowed 128Mi") {
			skipped = true
		}
	}
	if !skipped {
		t.Errorf("skips %+v: want memory's QoSClassChange naming minAllowed", d.Skips)
	}
}

func TestDecideKeepsQoSWithinMinAllowed(t *testing.T) {
	pod := builder.Pod("p").Container(builder.Container("side").Requests("500m", "128Mi").Limits("500m", "128Mi")).
		Container(builder.Container("app").Requests("1", "256Mi").Limits("2", "256Mi")).Obj()
	s := spec(containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "*", MinAllowed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}),
		containerPolicy(v1alpha1.ContainerPolicy{ContainerName: "app", ControlledValues: ptr(v1alpha1.ControlledValuesRequestsOnly)}))
	d, err := Decide(Input{Pod: pod, Spec: s, Now: now, MemoryFloorHeadroom: 0.1,
		Targets:    map[string]Target{"side": {Memory: q("32Mi")}, "app": {CPU: q("3")}},
		WorkingSet: map[string]resource.Quantity{"side": resource.MustParse("10Mi"), "app": resource.MustParse("10Mi")}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"side": "req.memory=64Mi,lim.memory=64Mi", "app": "req.cpu=1999m,lim.cpu=2"}
	if diff := cmp.Diff(want, rr(d)); diff != "" {
		t.Errorf("desired (-want,+got):\n%s", diff)
	}
}
