package boost

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/test/builder"
)

// resizeManager stands for actuator.FieldManager, which autoscale does not
// import.
const resizeManager = "tailor"

// ownsCPU is a pods/resize managedFields entry of manager that owns the cpu
// request of container, as the apiserver writes it after manager changed it.
func ownsCPU(manager, container string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Subresource: "resize",
		Time: &metav1.Time{Time: now}, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:containers":{"k:{\"name\":\"` + container +
			`\"}":{".":{},"f:resources":{"f:limits":{"f:cpu":{}},"f:requests":{"f:cpu":{}}}}}}}`),
	}
}

// ownsMemory is like ownsCPU, for the memory request only.
func ownsMemory(manager, container string) metav1.ManagedFieldsEntry {
	e := ownsCPU(manager, container)
	e.FieldsV1 = metav1.NewFieldsV1(`{"f:spec":{"f:containers":{"k:{\"name\":\"` + container +
		`\"}":{"f:resources":{"f:requests":{"f:memory":{}}}}}}}`)
	return e
}

func TestBoostTargets(t *testing.T) {
	boost := spec(func(s *v1alpha1.TailorPolicySpec) {
		s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr(int32(300)), Duration: &metav1.Duration{Duration: 30 * time.Second}}
	})
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
	// pod runs app at cpu, its container started 2m ago and Ready since
	// ready ago (nil: not Ready).
	pod := func(cpu string, ready *time.Duration, mf ...metav1.ManagedFieldsEntry) *corev1.Pod {
		p := builder.Pod("p").Container(builder.Container("app").Requests(cpu, "256Mi").Limits("4", "512Mi")).Obj()
		started := at(-2 * time.Minute)
		p.Status.StartTime = &started
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}
		cond := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: started}
		if ready != nil {
			cond = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(-*ready)}
		}
		p.Status.Conditions = []corev1.PodCondition{cond}
		p.ManagedFields = mf
		return p
	}
	started, warming := 40*time.Second, 10*time.Second
	admitted := func(p *corev1.Pod, text string) *corev1.Pod {
		p.Annotations = map[string]string{v1alpha1.BoostAnnotation: text}
		return p
	}
	restarted := func(p *corev1.Pod) *corev1.Pod {
		// Ready before its container started again: the kubelet has not
		// seen the restart yet.
		p.Status.ContainerStatuses[0].State.Running.StartedAt = at(-time.Second)
		p.Status.ContainerStatuses[0].RestartCount = 1
		return p
	}
	base500m := func(string) (resource.Quantity, bool) { return resource.MustParse("500m"), true }
	cases := map[string]struct {
		pod     *corev1.Pod
		base    func(string) (resource.Quantity, bool)
		holds   ownership.Holds
		want    map[string]string
		wantNot []string
	}{
		"starting below its boost: raised in place": {
			pod: pod("500m", nil), base: base500m,
			want: map[string]string{"app": "raise 1500m"},
		},
		"starting at its boost: held": {
			pod: pod("1500m", &warming, ownsCPU(FieldManager, "app")), base: base500m,
			want: map[string]string{"app": "hold"},
		},
		"starting, a boost the node's room cut: raised again": {
			pod: pod("1200m", nil, ownsCPU(FieldManager, "app")), base: base500m,
			want: map[string]string{"app": "raise 1500m"},
		},
		"starting without a base: boosted from its request": {
			pod: pod("400m", nil), base: func(string) (resource.Quantity, bool) { return resource.Quantity{}, false },
			want: map[string]string{"app": "raise 1200m"},
		},
		"admitted boost taken back once started": {
			pod: admitted(pod("1500m", &started), "app=1500m"), base: base500m,
			want: map[string]string{"app": "back 500m"},
		},
		"admitted boost tailor since set: not taken back": {
			pod: admitted(pod("900m", &started, ownsCPU(resizeManager, "app")), "app=1500m"), base: base500m,
			want: map[string]string{},
		},
		"admitted boost, tailor resized only the memory since: taken back": {
			pod: admitted(pod("1500m", &started, ownsMemory(resizeManager, "app")), "app=1500m"), base: base500m,
			want: map[string]string{"app": "back 500m"},
		},
		"in-place boost cut by the node's room taken back": {
			pod: pod("1200m", &started, ownsCPU(FieldManager, "app")), base: base500m,
			want: map[string]string{"app": "back 500m"},
		},
		"in-place boost at its base: nothing to take back": {
			pod: pod("500m", &started, ownsCPU(FieldManager, "app")), base: base500m,
			want: map[string]string{},
		},
		"in-place boost without a base: held until there is one": {
			pod: pod("1500m", &started, ownsCPU(FieldManager, "app")), base: func(string) (resource.Quantity, bool) { return resource.Quantity{}, false },
			want: map[string]string{"app": "hold"},
		},
		"a raise after the start is not a boost": {
			// Boosted in place, taken back, then raised for real usage:
			// tailor's own entry owns the cpu now, the boost's only memory.
			pod: pod("900m", &started, ownsMemory(FieldManager, "app"), ownsCPU(resizeManager, "app")), base: base500m,
			want: map[string]string{},
		},
		"a crash-looping container is boosted again": {
			pod: restarted(pod("500m", &started, ownsCPU(resizeManager, "app"))), base: base500m,
			want: map[string]string{"app": "raise 1500m"},
		},
		"a restart while boosted holds the boost": {
			pod: restarted(pod("1500m", &warming, ownsCPU(FieldManager, "app"))), base: base500m,
			want: map[string]string{"app": "hold"},
		},
		"cpu held for an HPA: not boosted": {
			pod: pod("500m", nil), base: base500m,
			holds:   ownership.Holds{Containers: map[string]map[corev1.ResourceName]bool{"app": {corev1.ResourceCPU: true}}},
			want:    map[string]string{},
			wantNot: []string{"container app is not boosted: a HorizontalPodAutoscaler divides by its cpu request"},
		},
		"a hand-written annotation takes back nothing": {
			pod: admitted(pod("1500m", &started), "app"), base: base500m,
			want: map[string]string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Targets(Input{Pod: tc.pod, Spec: boost, Base: tc.base, Holds: tc.holds, FieldManager: resizeManager, Now: now})
			text := map[string]string{}
			for c, bt := range got.Containers {
				switch {
				case bt.CPU == nil:
					text[c] = "hold"
				case bt.Raise:
					text[c] = "raise " + bt.CPU.String()
				default:
					text[c] = "back " + bt.CPU.String()
				}
			}
			if diff := cmp.Diff(tc.want, text); diff != "" {
				t.Errorf("targets (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNot, got.NotBoosted); diff != "" {
				t.Errorf("not boosted (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestGivesBoost(t *testing.T) {
	change := func(r corev1.ResourceName, before, after string) podchange.Change {
		return podchange.Change{Container: "app", Resource: r, RequestBefore: resource.MustParse(before), RequestNow: resource.MustParse(after)}
	}
	cases := map[string]struct {
		changes []podchange.Change
		raise   map[string]bool
		want    bool
	}{
		"a boost raised":               {changes: []podchange.Change{change(corev1.ResourceCPU, "500m", "1500m")}, raise: map[string]bool{"app": true}, want: true},
		"a boost taken back":           {changes: []podchange.Change{change(corev1.ResourceCPU, "1500m", "500m")}, raise: map[string]bool{}, want: false},
		"a cpu raise that is no boost": {changes: []podchange.Change{change(corev1.ResourceCPU, "500m", "900m")}, want: false},
		"memory only":                  {changes: []podchange.Change{change(corev1.ResourceMemory, "256Mi", "512Mi")}, raise: map[string]bool{"app": true}, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Gives(podchange.Decision{Changes: tc.changes}, tc.raise); got != tc.want {
				t.Errorf("Gives = %v, want %v", got, tc.want)
			}
		})
	}
}
