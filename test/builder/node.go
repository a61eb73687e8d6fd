package builder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeWrapper builds a corev1.Node.
type NodeWrapper struct{ corev1.Node }

// Node starts a linux node with no allocatable resources.
func Node(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelOSStable: "linux"}},
	}}
}

// Obj returns a deep copy.
func (n *NodeWrapper) Obj() *corev1.Node { return n.DeepCopy() }

// Allocatable sets status.allocatable cpu and memory (and capacity to match).
func (n *NodeWrapper) Allocatable(cpu, memory string) *NodeWrapper {
	n.Status.Allocatable = merge(n.Status.Allocatable, List(cpu, memory))
	n.Status.Capacity = merge(n.Status.Capacity, List(cpu, memory))
	return n
}

// DeclaredFeatures sets status.declaredFeatures, what the node's kubelet
// says it supports (1.35+): the apiserver checks a resize against them.
func (n *NodeWrapper) DeclaredFeatures(features ...string) *NodeWrapper {
	n.Status.DeclaredFeatures = append([]string{}, features...)
	return n
}

// Label sets one label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper {
	n.Labels[k] = v
	return n
}

// Ready sets the Ready condition to status.
func (n *NodeWrapper) Ready(status corev1.ConditionStatus) *NodeWrapper {
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: status})
	return n
}

// Unschedulable cordons the node.
func (n *NodeWrapper) Unschedulable() *NodeWrapper { n.Spec.Unschedulable = true; return n }

// Taint adds a taint.
func (n *NodeWrapper) Taint(key, value string, effect corev1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Address adds an address to status.addresses.
func (n *NodeWrapper) Address(t corev1.NodeAddressType, address string) *NodeWrapper {
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: t, Address: address})
	return n
}

// KubeletPort sets the port the node's kubelet serves on
// (status.daemonEndpoints.kubeletEndpoint.port).
func (n *NodeWrapper) KubeletPort(port int32) *NodeWrapper {
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	return n
}
