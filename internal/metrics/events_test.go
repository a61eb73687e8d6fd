package metrics_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/test/builder"
)

func TestTerminations(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	terminated := func(reason string, code int32, at time.Time) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, FinishedAt: metav1.NewTime(at)}}
	}
	runningState := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	app := metrics.Key{Namespace: "ns", Pod: "web", Container: "app"}
	base := func() *builder.PodWrapper {
		return builder.Pod("web").Namespace("ns").Container(builder.Container("app").Limits("1", "128Mi")).Phase(corev1.PodRunning)
	}

	cases := map[string]struct {
		pod   *corev1.Pod
		since time.Time
		want  []metrics.Termination
	}{
		"never restarted": {
			pod:   base().Running().Obj(),
			since: t0.Add(-time.Hour),
		},
		"OOM kill after since, limit from status resources": {
			pod: base().ContainerStatus(corev1.ContainerStatus{
				Name: "app", State: runningState, RestartCount: 3,
				LastTerminationState: terminated("OOMKilled", 137, t0),
				Resources:            &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
			}).Obj(),
			since: t0.Add(-time.Minute),
			want:  []metrics.Termination{{Key: app, FinishedAt: t0, Reason: "OOMKilled", ExitCode: 137, OOMKilled: true, SIGKILL: true, MemoryLimit: 256 << 20, RestartCount: 3}},
		},
		"OOM kill without status resources falls back to spec limit": {
			pod: base().ContainerStatus(corev1.ContainerStatus{
				Name: "app", State: runningState, RestartCount: 1, LastTerminationState: terminated("OOMKilled", 137, t0),
			}).Obj(),
			since: t0.Add(-time.Minute),
			want:  []metrics.Termination{{Key: app, FinishedAt: t0, Reason: "OOMKilled", ExitCode: 137, OOMKilled: true, SIGKILL: true, MemoryLimit: 128 << 20, RestartCount: 1}},
		},
		"already seen termination is not repeated": {
			pod: base().ContainerStatus(corev1.ContainerStatus{
				Name: "app", State: runningState, RestartCount: 1, LastTerminationState: terminated("OOMKilled", 137, t0),
			}).Obj(),
			since: t0,
		},
		"crash is a restart, not an OOM": {
			pod: base().ContainerStatus(corev1.ContainerStatus{
				Name: "app", State: runningState, RestartCount: 2, LastTerminationState: terminated("Error", 1, t0),
			}).Obj(),
			since: t0.Add(-time.Minute),
			want:  []metrics.Termination{{Key: app, FinishedAt: t0, Reason: "Error", ExitCode: 1, MemoryLimit: 128 << 20, RestartCount: 2}},
		},
		"terminated now, before the restart, after an earlier OOM kill": {
			pod: base().ContainerStatus(corev1.ContainerStatus{
				Name: "app", State: terminated("OOMKilled", 137, t0), RestartCount: 1,
				LastTerminationState: terminated("Error", 2, t0.Add(-30*time.Second)),
			}).Obj(),
			since: t0.Add(-time.Minute),
			want: []metrics.Termination{
				{Key: app, FinishedAt: t0.Add(-30 * time.Second), Reason: "Error", ExitCode: 2, MemoryLimit: 128 << 20, RestartCount: 1},
				{Key: app, FinishedAt: t0, Reason: "OOMKilled", ExitCode: 137, OOMKilled: true, SIGKILL: true, MemoryLimit: 128 << 20, RestartCount: 1},
			},
		},
		"terminated for good under restartPolicy Never, earlier one already seen": {
			pod: base().RestartPolicy(corev1.RestartPolicyNever).ContainerStatus(corev1.ContainerStatus{
				Name: "app", State: terminated("Completed", 0, t0),
				LastTerminationState: terminated("Error", 2, t0.Add(-30*time.Second)),
			}).Obj(),
			since: t0.Add(-10 * time.Second),
			want:  []metrics.Termination{{Key: app, FinishedAt: t0, Reason: "Completed", MemoryLimit: 128 << 20}},
		},
		"SIGKILL reported as Error (a real OOM kill on cgroup v1, or a probe kill)": {
			pod: base().ContainerStatus(corev1.ContainerStatus{
				Name: "app", State: runningState, RestartCount: 1, LastTerminationState: terminated("Error", 137, t0),
			}).Obj(),
			since: t0.Add(-time.Minute),
			want:  []metrics.Termination{{Key: app, FinishedAt: t0, Reason: "Error", ExitCode: 137, SIGKILL: true, MemoryLimit: 128 << 20, RestartCount: 1}},
		},
		"termination without finish time is ignored": {
			pod: base().ContainerStatus(corev1.ContainerStatus{
				Name: "app", State: runningState, RestartCount: 1, LastTerminationState: terminated("OOMKilled", 137, time.Time{}),
			}).Obj(),
			since: t0.Add(-time.Minute),
		},
		"sidecar OOM kill is reported, unlimited memory is 0": {
			pod: builder.Pod("web").Namespace("ns").Sidecar(builder.Container("proxy")).Container(builder.Container("app")).Phase(corev1.PodRunning).
				ContainerStatus(corev1.ContainerStatus{Name: "app", State: runningState}).
				ContainerStatus(corev1.ContainerStatus{Name: "proxy", State: runningState, RestartCount: 1, LastTerminationState: terminated("OOMKilled", 137, t0)}).Obj(),
			since: t0.Add(-time.Minute),
			want: []metrics.Termination{{Key: metrics.Key{Namespace: "ns", Pod: "web", Container: "proxy"},
				FinishedAt: t0, Reason: "OOMKilled", ExitCode: 137, OOMKilled: true, SIGKILL: true, RestartCount: 1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := metrics.Terminations(tc.pod, tc.since)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Terminations (-want,+got):\n%s", diff)
			}
		})
	}
}
