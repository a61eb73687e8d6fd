package cgroup

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Version is the cgroup hierarchy the node booted with.
type Version int

const (
	V1 Version = 1
	V2 Version = 2
)

// Tree is a node's cgroup filesystem as the kubelet's cgroupfs driver lays
// pods out in it: Root/kubepods[/burstable|/besteffort]/pod<UID>/<ID> on v2,
// and the same under each controller's directory (Root/cpu,cpuacct/...,
// Root/memory/...) on v1.
type Tree struct {
	Root    string
	Version Version
}

// The kubelet names a pod's cgroup after its UID (a UUID) and a
// container's after its runtime ID (64 hex digits for containerd and
// CRI-O). Anything else is refused: an ID with a slash or a dot could
// name a directory outside the pods' tree.
var (
	uidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	idPattern  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ContainerID is the runtime's ID of a container, from its status's
// containerID ("containerd://<id>"), checked.
func ContainerID(statusID string) (string, error) {
	_, id, ok := strings.Cut(statusID, "://")
	if !ok || !idPattern.MatchString(id) {
		return "", fmt.Errorf("container ID %q: want <runtime>://<64 hex digits>", statusID)
	}
	return id, nil
}

// Dir is the directory of a container's cgroup under controller (v1: "cpu",
// "cpuacct" or "memory"; v2: ignored, every controller shares one
// directory). qos is the pod's QoS class, which picks the kubelet's
// parent cgroup.
func (t Tree) Dir(controller string, qos corev1.PodQOSClass, podUID, containerID string) (string, error) {
	if !uidPattern.MatchString(podUID) {
		return "", fmt.Errorf("pod UID %q is not a UUID", podUID)
	}
	if !idPattern.MatchString(containerID) {
		return "", fmt.Errorf("container ID %q is not 64 hex digits", containerID)
	}
	parts := []string{t.Root}
	if t.Version == V1 {
		parts = append(parts, controller)
	}
	parts = append(parts, "kubepods")
	switch qos {
	case corev1.PodQOSGuaranteed:
	case corev1.PodQOSBurstable:
		parts = append(parts, "burstable")
	case corev1.PodQOSBestEffort:
		parts = append(parts, "besteffort")
	default:
		return "", fmt.Errorf("QoS class %q unknown", qos)
	}
	parts = append(parts, "pod"+podUID, containerID)
	return filepath.Join(parts...), nil
}
