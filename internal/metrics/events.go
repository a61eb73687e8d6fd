package metrics

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailorhq/tailor/internal/amount"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// Termination is a container's last termination as pod status reports it.
// The kubelet keeps only the last one, so several restarts between two reads
// show as one Termination; RestartCount tells how many there were.
type Termination struct {
	Key
	// FinishedAt is when the container ended; the recommender dates the
	// restart (and the OOM kill) by it.
	FinishedAt time.Time
	Reason     string
	ExitCode   int32
	// OOMKilled is true when the runtime reported that the kernel killed
	// the container for exceeding its memory limit: grow memory.
	OOMKilled bool
	// SIGKILL is true when the container died of SIGKILL (exit code 137),
	// whatever the reason says. On this project's cgroup v1 node a real
	// memcg OOM kill (in the kernel log) was reported as reason "Error",
	// exit code 137, so a SIGKILLed container with a memory limit and a
	// working set near it is a probable OOM kill; a liveness-probe kill after
	// its grace period also ends in SIGKILL, so deciding is the caller's.
	SIGKILL bool
	// MemoryLimit is the container's memory limit in bytes as the kubelet
	// reports it applied (status.resources, else spec), 0 when unlimited.
	MemoryLimit  float64
	RestartCount int32
}

// Terminations returns the terminations of pod's containers that finished
// after since: the last one of each container and, when it is terminated
// now, the current one, oldest first, in the order of podcontainers.Names(pod).
func Terminations(pod *corev1.Pod, since time.Time) []Termination {
	var out []Termination
	statuses := map[string]corev1.ContainerStatus{}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range list {
			statuses[st.Name] = st
		}
	}
	for _, name := range podcontainers.Names(pod) {
		st, ok := statuses[name]
		if !ok {
			continue
		}
		// The previous run's end, then the current one's when the container
		// is terminated right now (before its restart, or for good under
		// restartPolicy Never): both can be news since the last read.
		for _, term := range []*corev1.ContainerStateTerminated{st.LastTerminationState.Terminated, st.State.Terminated} {
			if term == nil {
				continue
			}
			finished := term.FinishedAt.Time
			if finished.IsZero() || !finished.After(since) {
				continue
			}
			out = append(out, Termination{
				Key:          Key{Namespace: pod.Namespace, Pod: pod.Name, Container: name},
				FinishedAt:   finished,
				Reason:       term.Reason,
				ExitCode:     term.ExitCode,
				OOMKilled:    term.Reason == "OOMKilled",
				SIGKILL:      term.ExitCode == 128+9,
				MemoryLimit:  memoryLimit(pod, name, st),
				RestartCount: st.RestartCount,
			})
		}
	}
	return out
}

func memoryLimit(pod *corev1.Pod, name string, st corev1.ContainerStatus) float64 {
	if st.Resources != nil {
		if q, ok := st.Resources.Limits[corev1.ResourceMemory]; ok {
			return amount.Of(corev1.ResourceMemory, q)
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
					return amount.Of(corev1.ResourceMemory, q)
				}
			}
		}
	}
	return 0
}
