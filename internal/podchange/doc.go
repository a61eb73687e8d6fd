// Package podchange decides one pod's change: from the recommender's
// targets for its containers (and its pod-level resources), what each
// resize asks for, or why a container is skipped, while keeping tailor's
// promises to that pod alone (its QoS class, no restart its policy
// forbids, no limit added, memory never below what it uses, its bounds and
// steps). It knows nothing of the pod's neighbours: the order across a
// policy's pods, a node's room shared between them and the gates that hold
// lowerings are decided above it, from its Decisions, so each of those can
// be read and tested against one pod's answer.
package podchange
