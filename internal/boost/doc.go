// Package boost decides a startup boost: whether a pod is in the start of
// its life (Starting), how much CPU a container is lent then, and which
// resizes raise or return that loan (Targets), recorded on the pod so the
// next sync, or another replica of the controller, reads the same boost
// back. It is a package of its own because the advice (internal/advise)
// applies a boost to what it tells a pod too, and that must not pull in
// the whole decision of a sync.
package boost
