package nsrules

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/kubectl/pkg/util/qos"
)

// What this file mirrors lives in Kubernetes v1.37.1:
//   - k8s.io/apiserver pkg/admission/plugin/resourcequota/controller.go,
//     CheckRequest: which quotas match, the "must specify" and "status
//     unknown" refusals, and that an update is charged only what it adds.
//   - k8s.io/kubernetes pkg/quota/v1/evaluator/core/pods.go: the pod
//     evaluator handles CREATE and UPDATE of pods/resize (Handles), its usage
//     (PodUsageFunc: spec or status, whichever is larger, for a pod being
//     resized) and its scopes (podMatchesScopeFunc).

// quotaResources are the quota resources that count a pod's cpu and memory;
// cpu and memory are its requests.
var quotaResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
}

// Violations says what the apiserver's LimitRanger and ResourceQuota
// admission would refuse of pod, which must already be what the LimitRanger
// made of it (Admitted). old is nil for a create; for an update of
// pods/resize it is the pod before, and then:
//   - the LimitRanger judges the whole new pod again, exactly as on create
//     (a pod already being deleted is let through);
//   - a quota charges only the increase of each resource over old, so a
//     resize that lowers or keeps a value never exceeds a quota; but the
//     "must specify" rule of a quota on cpu or memory is checked again.
//
// Besides admission, Violations reports a request above its limit: pod
// validation refuses it (ValidateResourceRequirements, "must be less than or
// equal to cpu limit"), and a LimitRange's default limit below a request the
// container sets is how it happens; such a violation names that LimitRange.
//
// On a resize, the LimitRanger also defaults what the pod lacks. A default
// for cpu or memory simply becomes part of the resize (a pod created without
// a cpu limit gets the LimitRange's default limit with its first resize). A
// default for any other resource (say ephemeral-storage, from a LimitRange
// written after the pod) makes every resize of the pod invalid: "only cpu and
// memory resources are mutable". Violations reports that too, naming the
// LimitRange, since no cpu or memory value can get the resize through.
//
// Otherwise only cpu and memory are judged. A quota counts a pod's usage as the larger
// of its spec and its status (what the kubelet allocated or runs), as the
// apiserver's quota evaluator does once in-place resize is on.
//
// Not mirrored: the apiserver stops charging a pod whose deletion grace period
// has run out (that needs the clock: nsrules charges it, the safe side), and
// an AdmissionConfiguration's limitedResources (not a namespace's object).
func (r Rules) Violations(pod, old *corev1.Pod) []Violation {
	out := r.LimitRangerViolations(pod, old)
	out = append(out, r.requestsOverLimits(pod)...)
	if old != nil {
		out = append(out, r.otherResourcesDefaulted(pod, old)...)
	}
	return append(out, r.QuotaViolations(pod, old)...)
}

// LimitRangerViolations are the part of Violations the LimitRanger
// admission plugin refuses (its validating phase): pod, as Admitted, judged
// whole against every LimitRange, on a create (old nil) and on a resize
// alike; nothing when old is already being deleted.
func (r Rules) LimitRangerViolations(pod, old *corev1.Pod) []Violation {
	if old != nil && old.DeletionTimestamp != nil {
		return nil
	}
	return r.limitRangeViolations(pod)
}

// QuotaViolations are the part of Violations the ResourceQuota admission
// plugin refuses, the last admission plugin to run: a resize (old set) is
// charged only its increase over old. A quota whose usage pod exceeds is
// reported once per exceeded resource, each with the apiserver's one
// message for the quota, which names every resource it exceeds.
func (r Rules) QuotaViolations(pod, old *corev1.Pod) []Violation {
	var out []Violation
	usage := podUsage(pod)
	var oldUsage corev1.ResourceList
	if old != nil {
		oldUsage = podUsage(old)
	}
	for _, q := range sortedQuotas(r.Quotas) {
		hard := sizedHard(q)
		if len(hard) == 0 || !quotaMatches(q, pod) {
			continue
		}
		object := "ResourceQuota/" + q.Name
		if v := constraintViolations(q, hard, pod); len(v) > 0 {
			out = append(out, v...)
			continue
		}
		if v := unknownStatus(q, hard); len(v) > 0 {
			out = append(out, v...)
			continue
		}
		charged := usage
		// The quota charges the increase only when old counted against it too.
		if old != nil && quotaMatches(q, old) {
			charged = increase(usage, oldUsage)
		}
		var exceeded []corev1.ResourceName
		for _, res := range hard {
			add := charged[res]
			if add.Sign() <= 0 {
				continue
			}
			total := q.Status.Used[res].DeepCopy()
			total.Add(add)
			if total.Cmp(q.Status.Hard[res]) > 0 {
				exceeded = append(exceeded, res)
			}
		}
		if len(exceeded) == 0 {
			continue
		}
		msg := fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
			q.Name, prettyPrint(charged, exceeded), prettyPrint(q.Status.Used, exceeded), prettyPrint(q.Status.Hard, exceeded))
		for _, res := range exceeded {
			out = append(out, Violation{Object: object, Resource: res, Message: msg})
		}
	}
	return out
}

// prettyPrint writes names' entries of l as the ResourceQuota admission
// plugin does (prettyPrint in its controller.go): name=value, sorted by
// name, joined by commas.
func prettyPrint(l corev1.ResourceList, names []corev1.ResourceName) string {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	parts := make([]string, len(sorted))
	for i, res := range sorted {
		q := l[res]
		parts[i] = string(res) + "=" + q.String()
	}
	return strings.Join(parts, ",")
}

// sizedHard are the cpu and memory resources of q's status.hard, in a fixed
// order. A quota the quota controller has not yet processed has none: it
// matches no pod, and admission lets pods through it.
func sizedHard(q corev1.ResourceQuota) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, res := range quotaResources {
		if _, ok := q.Status.Hard[res]; ok {
			out = append(out, res)
		}
	}
	return out
}

// constraintViolations: a quota on cpu or memory requires every container
// and init container to set the request (cpu, memory, requests.*) or the
// limit (limits.*) it counts, unless the pod sets pod-level resources.
func constraintViolations(q corev1.ResourceQuota, hard []corev1.ResourceName, pod *corev1.Pod) []Violation {
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return nil
	}
	var out []Violation
	for _, res := range hard {
		var missing []string
		for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for _, c := range cs {
				if _, ok := containerUsage(c.Resources.Requests, c.Resources.Limits)[res]; !ok {
					missing = append(missing, c.Name)
				}
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			missing = slices.Compact(missing)
			out = append(out, Violation{Object: "ResourceQuota/" + q.Name, Resource: res, Message: fmt.Sprintf(
				"failed quota: %s: must specify %s for: %s", q.Name, res, strings.Join(missing, ","))})
		}
	}
	return out
}

// unknownStatus: a quota whose status.used lacks a resource its status.hard
// has refuses every pod it matches until the quota controller fills it in.
func unknownStatus(q corev1.ResourceQuota, hard []corev1.ResourceName) []Violation {
	var out []Violation
	for _, res := range hard {
		if _, ok := q.Status.Used[res]; !ok {
			out = append(out, Violation{Object: "ResourceQuota/" + q.Name, Resource: res, Message: fmt.Sprintf(
				"status unknown for quota: %s, resources: %s", q.Name, res)})
		}
	}
	return out
}

// podUsage is what a quota charges for pod, in quota resource names. A pod
// that has finished is charged nothing.
func podUsage(pod *corev1.Pod) corev1.ResourceList {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return corev1.ResourceList{}
	}
	opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
	return containerUsage(resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts))
}

func containerUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, res := range resources {
		if q, ok := requests[res]; ok {
			out[res] = q
			out["requests."+res] = q
		}
		if q, ok := limits[res]; ok {
			out["limits."+res] = q
		}
	}
	return out
}

// increase is new less old, per resource, never below zero.
func increase(usage, old corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for res, q := range usage {
		d := q.DeepCopy()
		if o, ok := old[res]; ok {
			d.Sub(o)
		}
		if d.Sign() > 0 {
			out[res] = d
		}
	}
	return out
}

// quotaMatches says whether every scope of q takes pod in. A scope nsrules
// does not know (a future one, or VolumeAttributesClass, which is for
// claims) is taken to match: the apiserver's pod evaluator says it does not,
// so nsrules may report a refusal the apiserver would not make, never the
// other way round.
func quotaMatches(q corev1.ResourceQuota, pod *corev1.Pod) bool {
	var selectors []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		selectors = append(selectors, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		selectors = append(selectors, q.Spec.ScopeSelector.MatchExpressions...)
	}
	for _, s := range selectors {
		if !scopeMatches(s, pod) {
			return false
		}
	}
	return true
}

func scopeMatches(s corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) bool {
	// As in podMatchesScopeFunc, the operator counts only for PriorityClass.
	switch s.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return isTerminating(pod)
	case corev1.ResourceQuotaScopeNotTerminating:
		return !isTerminating(pod)
	case corev1.ResourceQuotaScopeBestEffort:
		return qos.GetPodQOS(pod) == corev1.PodQOSBestEffort
	case corev1.ResourceQuotaScopeNotBestEffort:
		return qos.GetPodQOS(pod) != corev1.PodQOSBestEffort
	case corev1.ResourceQuotaScopePriorityClass:
		class := pod.Spec.PriorityClassName
		switch s.Operator {
		case corev1.ScopeSelectorOpExists:
			return class != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return class == ""
		case corev1.ScopeSelectorOpIn:
			return class != "" && slices.Contains(s.Values, class)
		case corev1.ScopeSelectorOpNotIn:
			return class == "" || !slices.Contains(s.Values, class)
		}
		return true
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod)
	}
	return true
}

func isTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t corev1.PodAffinityTerm) bool { return len(t.Namespaces) != 0 || t.NamespaceSelector != nil }
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	return slices.ContainsFunc(terms, cross)
}

// Cap is how much more of a resource there is room for, and what sets it.
type Cap struct {
	Quantity resource.Quantity
	// By names the object and the rule: "ResourceQuota/team requests.cpu",
	// "LimitRange/team Pod max cpu".
	By string
}

// Room is how much a pod's cpu and memory may still grow, keyed by quota
// resource name: requests.cpu, requests.memory, limits.cpu, limits.memory.
// A resource nothing caps has no entry.
type Room struct {
	// Quota is what the quotas matching the pod's scopes have left, the least
	// over them (a quota's cpu and memory count as requests). It is shared by
	// every pod those quotas match: the caller divides it between the pods it
	// raises, as it divides a node's room. A quota whose status does not say
	// what is used leaves no room.
	Quota map[corev1.ResourceName]Cap
	// Pod is what a Pod-type LimitRange max leaves this pod over its current
	// sums (sidecars and init containers counted as the LimitRanger counts
	// them); it is the pod's own.
	Pod map[corev1.ResourceName]Cap
}

// Room is the room pod (as admitted) has left to grow.
func (r Rules) Room(pod *corev1.Pod) Room {
	room := Room{Quota: map[corev1.ResourceName]Cap{}, Pod: map[corev1.ResourceName]Cap{}}
	for _, q := range sortedQuotas(r.Quotas) {
		if !quotaMatches(q, pod) {
			continue
		}
		for _, res := range sizedHard(q) {
			left := resource.Quantity{}
			if used, ok := q.Status.Used[res]; ok {
				left = q.Status.Hard[res].DeepCopy()
				left.Sub(used)
				if left.Sign() < 0 {
					left = resource.Quantity{}
				}
			}
			key := res
			if res == corev1.ResourceCPU || res == corev1.ResourceMemory {
				key = "requests." + res
			}
			least(room.Quota, key, Cap{Quantity: left, By: fmt.Sprintf("ResourceQuota/%s %s", q.Name, res)})
		}
	}
	opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
	sums := map[string]corev1.ResourceList{"requests": resourcehelper.PodRequests(pod, opts), "limits": resourcehelper.PodLimits(pod, opts)}
	for _, lr := range sortedLimitRanges(r.LimitRanges) {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypePod {
				continue
			}
			for _, res := range resources {
				max, ok := item.Max[res]
				if !ok {
					continue
				}
				for _, kind := range []string{"requests", "limits"} {
					left := max.DeepCopy()
					if have, ok := sums[kind][res]; ok {
						left.Sub(have)
					}
					if left.Sign() < 0 {
						left = resource.Quantity{}
					}
					least(room.Pod, corev1.ResourceName(kind+"."+string(res)), Cap{Quantity: left, By: fmt.Sprintf("LimitRange/%s Pod max %s %s", lr.Name, res, max.String())})
				}
			}
		}
	}
	return room
}

func least(m map[corev1.ResourceName]Cap, key corev1.ResourceName, c Cap) {
	if have, ok := m[key]; !ok || c.Quantity.Cmp(have.Quantity) < 0 {
		m[key] = c
	}
}
