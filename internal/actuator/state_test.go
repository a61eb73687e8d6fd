package actuator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/test/builder"
)

// pod returns a one-container pod whose spec asks for specCPU and whose
// status reports statusCPU, at the given generations.
func pod(specCPU, statusCPU string, generation, observed int64, conds ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: generation},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "app",
			Resources: corev1.ResourceRequirements{Requests: builder.List(specCPU, "64Mi"), Limits: builder.List(specCPU, "64Mi")},
		}}},
		Status: corev1.PodStatus{
			ObservedGeneration: observed,
			Conditions:         conds,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name:      "app",
				Resources: &corev1.ResourceRequirements{Requests: builder.List(statusCPU, "64Mi"), Limits: builder.List(statusCPU, "64Mi")},
			}},
		},
	}
}

func cond(typ corev1.PodConditionType, reason, msg string) corev1.PodCondition {
	return corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: msg}
}

func TestObserve(t *testing.T) {
	cases := map[string]struct {
		pod          *corev1.Pod
		wantState    State
		wantPending  []string
		wantTerminal bool
	}{
		"done when status matches spec at the current generation": {
			pod: pod("500m", "500m", 2, 2), wantState: StateDone, wantTerminal: true,
		},
		"proposed while the kubelet has not observed the generation": {
			pod: pod("1", "500m", 3, 2), wantState: StateProposed,
		},
		"in progress while status still shows old values": {
			pod: pod("1", "500m", 3, 3), wantState: StateInProgress,
			wantPending: []string{"app: cpu request 500m (spec 1)", "app: cpu limit 500m (spec 1)"},
		},
		"deferred": {
			pod:       pod("1", "500m", 3, 3, cond(corev1.PodResizePending, corev1.PodReasonDeferred, "Node didn't have enough capacity")),
			wantState: StateDeferred,
		},
		"infeasible is terminal": {
			pod:       pod("1", "500m", 3, 3, cond(corev1.PodResizePending, corev1.PodReasonInfeasible, "Node didn't have enough capacity")),
			wantState: StateInfeasible, wantTerminal: true,
		},
		"error is terminal": {
			pod:       pod("1", "500m", 3, 3, cond(corev1.PodResizeInProgress, corev1.PodReasonError, "runtime failed")),
			wantState: StateError, wantTerminal: true,
		},
		"in progress condition without reason": {
			pod:       pod("1", "500m", 3, 3, cond(corev1.PodResizeInProgress, "", "")),
			wantState: StateInProgress,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Observe(tc.pod)
			if got.State != tc.wantState {
				t.Errorf("State = %s, want %s (%+v)", got.State, tc.wantState, got)
			}
			if diff := cmp.Diff(tc.wantPending, got.Pending); diff != "" {
				t.Errorf("Pending (-want,+got):\n%s", diff)
			}
			if got.Terminal() != tc.wantTerminal {
				t.Errorf("Terminal() = %v, want %v", got.Terminal(), tc.wantTerminal)
			}
		})
	}
}

func TestObserveDatesConditionsByTheirOwnGeneration(t *testing.T) {
	// Seen on a 1.37 kubelet: the Deferred condition carries the new
	// generation while status.observedGeneration still names the old one.
	c := cond(corev1.PodResizePending, corev1.PodReasonDeferred, "Node didn't have enough resource")
	c.ObservedGeneration = 4
	got := Observe(pod("700m", "250m", 4, 3, c))
	if got.State != StateDeferred || got.Generation != 4 {
		t.Errorf("Observe = %s at generation %d, want %s at 4", got.State, got.Generation, StateDeferred)
	}
	if got := Observe(pod("700m", "250m", 4, 3)); got.State != StateProposed || got.Generation != 3 {
		t.Errorf("without a condition: %s at generation %d, want %s at 3", got.State, got.Generation, StateProposed)
	}
}

func TestObserveIgnoresFinishedInitContainersButChecksSidecars(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	p := pod("500m", "500m", 2, 2)
	p.Spec.InitContainers = []corev1.Container{
		{Name: "setup", Resources: corev1.ResourceRequirements{Requests: builder.List("1", "")}},
		{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: builder.List("200m", "")}},
	}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{
		{Name: "setup", Resources: &corev1.ResourceRequirements{Requests: builder.List("100m", "")}},
		{Name: "proxy", Resources: &corev1.ResourceRequirements{Requests: builder.List("100m", "")}},
	}
	got := Observe(p)
	want := []string{"proxy: cpu request 100m (spec 200m)"}
	if diff := cmp.Diff(want, got.Pending); diff != "" {
		t.Errorf("Pending (-want,+got):\n%s", diff)
	}
}
