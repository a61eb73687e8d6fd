// Package newpods plans what a workload's new pods are created with: the
// admission entry (PlanEntry, status.admission) the admission policy
// applies to each pod as it is created, sized by the rules of an in-place
// resize (Admit), within the namespace's LimitRanges and quotas and the
// room a new pod finds.
//
// It is apart from the running pods' decision because a new pod has no
// node, no usage and no resize history: nothing of the fleet's order or of
// the gates on lowerings applies. Recreating a pod short of room builds on
// it (a replacement is a new pod, recorded as an entry is), so the import
// points from internal/autoscale/placement to here and not back.
package newpods
