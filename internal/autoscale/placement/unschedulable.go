package placement

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// UnschedulableAfter is how long a pod tailor sized must wait unschedulable
// before it is replaced: the scheduler retries a pod as room frees (a
// rolling update's old pod going away), and a pod that finds a node within
// this was only early.
const UnschedulableAfter = 30 * time.Second

// Unschedulable reports whether p waits for a node the scheduler found no
// room on, and since when.
func Unschedulable(p *corev1.Pod) (bool, time.Time) {
	if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending || !p.DeletionTimestamp.IsZero() {
		return false, time.Time{}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

// StuckInput is what DecideStuck reads.
type StuckInput struct {
	// Pods are the policy's pods that are not bound to a node.
	Pods []*corev1.Pod
	// Template is the workload's pod template, and Entry what a new pod of
	// it is created with now (status.admission as last written; nil: the
	// template's size).
	Template *corev1.PodTemplateSpec
	Entry    *v1alpha1.Admission
	Now      time.Time
}

// Stuck is a pod tailor sized that no node has room for.
type Stuck struct {
	Pod *corev1.Pod
	// Since is when the scheduler first found no room for it.
	Since time.Time
	// Replace: a new pod would now be created smaller, so deleting this
	// one lets its controller create one that may fit. False: the entry
	// must come down first (a sync plans it against the nodes' free room).
	Replace bool
	Message string
}

// DecideStuck finds the pods tailor sized (an admission policy of tailor's
// marked them v1alpha1.AdmittedAnnotation) above their template that have
// waited unschedulable for UnschedulableAfter, and says which to replace:
// those a new pod of the workload would now be created smaller than. A pod
// at or under its template's size is not tailor's to replace: it would be
// as stuck without tailor. RetryAfter is when a pod not yet due becomes so.
func DecideStuck(in StuckInput) ([]Stuck, time.Duration) {
	if in.Template == nil {
		return nil, 0
	}
	template := PodRequests(&corev1.Pod{Spec: in.Template.Spec}, nil)
	now := PodRequests(&corev1.Pod{Spec: in.Template.Spec}, in.Entry)
	var out []Stuck
	var retry time.Duration
	for _, p := range in.Pods {
		waiting, since := Unschedulable(p)
		if !waiting {
			continue
		}
		// Only a pod an admission policy of tailor's sized is tailor's to
		// replace. One without the mark was created as its own template
		// says, and that may be an older template than the one read here:
		// a rollout's old ReplicaSet, larger than the new, would otherwise
		// look sized above it and be deleted and created again, the same,
		// every UnschedulableAfter.
		if _, sized := p.Annotations[v1alpha1.AdmittedAnnotation]; !sized {
			continue
		}
		has := PodRequests(p, nil)
		if !above(has, template) {
			continue
		}
		if wait := since.Add(UnschedulableAfter).Sub(in.Now); wait > 0 {
			if retry == 0 || wait < retry {
				retry = wait
			}
			continue
		}
		s := Stuck{Pod: p, Since: since, Replace: above(has, now)}
		s.Message = fmt.Sprintf("pod %s asks for %s, above its template's %s, and no node has had room for it for %s",
			p.Name, listText(has), listText(template), in.Now.Sub(since).Round(time.Second))
		if s.Replace {
			s.Message += fmt.Sprintf("; replaced: new pods are now created with %s", listText(now))
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod.Name < out[j].Pod.Name })
	return out, retry
}

// PodRequests is p's cpu and memory requests as the scheduler counts them,
// with an admission entry's containers applied when entry is not nil.
func PodRequests(p *corev1.Pod, entry *v1alpha1.Admission) corev1.ResourceList {
	q := p.DeepCopy()
	if entry != nil {
		for _, ac := range entry.Containers {
			if c := podcontainers.Named(q, ac.Name); c != nil {
				c.Resources.Requests = mergeList(c.Resources.Requests, ac.Requests)
				c.Resources.Limits = mergeList(c.Resources.Limits, ac.Limits)
			}
		}
	}
	all := resourcehelper.PodRequests(q, resourcehelper.PodResourcesOptions{})
	out := corev1.ResourceList{}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if v, ok := all[r]; ok {
			out[r] = v
		}
	}
	return out
}

// above reports whether a asks for more of any resource than b.
func above(a, b corev1.ResourceList) bool {
	for r, q := range a {
		if q.Cmp(b[r]) > 0 {
			return true
		}
	}
	return false
}

func listText(l corev1.ResourceList) string {
	var parts []string
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := l[r]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", r, q.String()))
		}
	}
	return strings.Join(parts, ", ")
}
