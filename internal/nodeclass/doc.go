// Package nodeclass answers one question: which class of node a node is,
// for a policy that learns a DaemonSet's usage per class
// (spec.nodeClasses). A class is the value of a label the policy names, or
// the node's size: the gather step classes the nodes it reads, the
// learner keeps one state per class, and status names each class the same
// way. It imports only the Kubernetes core types, never anything that
// decides.
package nodeclass
