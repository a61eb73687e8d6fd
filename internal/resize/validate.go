package resize

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/tailorhq/tailor/internal/podcontainers"
)

// mirrorPodAnnotation marks static pods (k8s.io/kubernetes pkg/apis/core, MirrorPodAnnotationKey).
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

var cpuAndMemory = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// validate mirrors ValidatePodResize (pkg/apis/core/validation/validation.go)
// and the parts of validatePodMetadataAndSpec a resize can break, for the
// given server version. It returns every violation, most specific first.
func validate(before, after *corev1.Pod, res *Result, ephemeral []string, server Version) []Violation {
	var v []Violation
	add := func(rule Rule, format string, args ...any) {
		v = append(v, Violation{Rule: rule, Message: fmt.Sprintf(format, args...)})
	}

	if !server.AtLeast(33) {
		add(RuleServerVersion, "in-place pod resize needs Kubernetes 1.33 or later (InPlacePodVerticalScaling is on by default from 1.33); server is %s: recreate the pod instead", server)
		return v
	}
	if _, ok := before.Annotations[mirrorPodAnnotation]; ok {
		add(RuleStaticPod, "static pods cannot be resized: change the manifest on the node instead")
		return v
	}
	if before.Spec.OS != nil && before.Spec.OS.Name == corev1.Windows {
		add(RuleUnsupportedPlatform, "windows pods cannot be resized")
		return v
	}
	for _, name := range ephemeral {
		add(RuleNonResizableContainer, "ephemeral container %q has no resources and cannot be resized (the resize subresource ignores ephemeralContainers): leave it out of the desired resources", name)
	}
	if !resizeSupportedByNode(before) {
		add(RuleNodeWithoutResize, "Pod running on node without support for resize: the kubelet predates in-place resize; upgrade the node or recreate the pod")
	}

	plrBefore := hasPodLevel(before.Spec.Resources)
	plrAfter := hasPodLevel(after.Spec.Resources)
	if plrBefore || plrAfter {
		if !server.AtLeast(36) {
			add(RulePodLevelResizeDisabled, "resize of pods with pod-level resources is forbidden when the InPlacePodLevelResourcesVerticalScaling feature gate is disabled (alpha, off by default, in 1.35; beta, on, from 1.36); server is %s", server)
			return v
		}
		v = append(v, validatePodLevelChange(before.Spec.Resources, after.Spec.Resources)...)
	}

	for i := range before.Spec.InitContainers {
		b, a := &before.Spec.InitContainers[i], &after.Spec.InitContainers[i]
		changed := !listEqual(b.Resources.Requests, a.Resources.Requests) || !listEqual(b.Resources.Limits, a.Resources.Limits)
		path := fmt.Sprintf("spec.initContainers[%d]", i)
		if !podcontainers.IsSidecar(b) {
			if !changed {
				continue
			}
			if !server.AtLeast(36) {
				add(RuleNonResizableContainer, "%s (%s): resources for non-sidecar init containers are immutable before Kubernetes 1.36 (server is %s)", path, b.Name, server)
				continue
			}
			if hasRestartContainerPolicy(a) {
				add(RuleNonResizableContainer, "%s (%s): non-sidecar init containers with a resize policy of RestartContainer cannot be resized", path, b.Name)
				continue
			}
		}
		v = append(v, validateContainerChange(b, a, path, server)...)
	}
	for i := range before.Spec.Containers {
		b, a := &before.Spec.Containers[i], &after.Spec.Containers[i]
		v = append(v, validateContainerChange(b, a, fmt.Sprintf("spec.containers[%d]", i), server)...)
	}

	v = append(v, validateSpec(after)...)

	if res.QoSBefore != res.QoSAfter {
		add(RuleQoSClassChange, "Pod QOS Class may not change as a result of resizing (%s -> %s): %s", res.QoSBefore, res.QoSAfter, qosAdvice(res.QoSBefore))
	}
	return v
}

// validateContainerChange covers validateContainerResize (no removals), the
// cpu/memory-only rule, and the 1.33 memory-limit rule for one container.
func validateContainerChange(b, a *corev1.Container, path string, server Version) []Violation {
	var v []Violation
	if removed := removedNames(b.Resources.Requests, a.Resources.Requests); len(removed) > 0 {
		v = append(v, Violation{RuleResourceRemoved, fmt.Sprintf("%s.resources.requests (%s): resource requests cannot be removed (%s); set a value instead", path, b.Name, joinNames(removed))})
	}
	if removed := removedNames(b.Resources.Limits, a.Resources.Limits); len(removed) > 0 {
		v = append(v, Violation{RuleResourceRemoved, fmt.Sprintf("%s.resources.limits (%s): resource limits cannot be removed (%s); set a value instead", path, b.Name, joinNames(removed))})
	}
	if other := nonCPUMemoryChanges(b.Resources.Requests, a.Resources.Requests, b.Resources.Limits, a.Resources.Limits); len(other) > 0 {
		v = append(v, Violation{RuleUnsupportedResource, fmt.Sprintf("%s (%s): only cpu and memory resources are mutable; %s cannot change in place", path, b.Name, joinNames(other))})
	}
	if !server.AtLeast(34) && policyFor(a, corev1.ResourceMemory) != corev1.RestartContainer {
		bl, bok := b.Resources.Limits[corev1.ResourceMemory]
		al, aok := a.Resources.Limits[corev1.ResourceMemory]
		switch {
		case bok && aok && al.Cmp(bl) < 0:
			v = append(v, Violation{RuleMemoryLimitDecrease, fmt.Sprintf("%s.resources.limits[memory] (%s): memory limits cannot be decreased unless resizePolicy is RestartContainer on Kubernetes 1.33 (%s -> %s); set the memory resizePolicy to RestartContainer or upgrade to 1.34+", path, b.Name, bl.String(), al.String())})
		case !bok && aok:
			// 1.33 treats adding a limit as lowering it from "max".
			v = append(v, Violation{RuleMemoryLimitDecrease, fmt.Sprintf("%s.resources.limits[memory] (%s): memory limits cannot be added unless resizePolicy is RestartContainer on Kubernetes 1.33", path, b.Name)})
		}
	}
	return v
}

// validatePodLevelChange mirrors validatePodLevelResourcesResize.
func validatePodLevelChange(b, a *corev1.ResourceRequirements) []Violation {
	var v []Violation
	if b == nil {
		return nil
	}
	var aReq, aLim corev1.ResourceList
	if a != nil {
		aReq, aLim = a.Requests, a.Limits
	}
	if removed := removedNames(b.Requests, aReq); len(removed) > 0 {
		v = append(v, Violation{RuleResourceRemoved, fmt.Sprintf("spec.resources.requests: pod-level resource requests cannot be removed (%s)", joinNames(removed))})
	}
	if removed := removedNames(b.Limits, aLim); len(removed) > 0 {
		v = append(v, Violation{RuleResourceRemoved, fmt.Sprintf("spec.resources.limits: pod-level resource limits cannot be removed (%s)", joinNames(removed))})
	}
	if other := nonCPUMemoryChanges(b.Requests, aReq, b.Limits, aLim); len(other) > 0 {
		v = append(v, Violation{RuleUnsupportedResource, fmt.Sprintf("spec.resources: only cpu and memory resources are mutable at pod-level; %s cannot change", joinNames(other))})
	}
	return v
}

// validateSpec re-checks the resized spec as validatePodMetadataAndSpec does:
// requests <= limits per container and at pod level, pod-level consistency,
// and resize policies under restartPolicy Never.
func validateSpec(pod *corev1.Pod) []Violation {
	var v []Violation
	check := func(r corev1.ResourceRequirements, path string) {
		for _, name := range sortedNames(r.Limits) {
			lim := r.Limits[name]
			if req, ok := r.Requests[name]; ok && req.Cmp(lim) > 0 {
				v = append(v, Violation{RuleRequestsExceedLimits, fmt.Sprintf("%s.requests[%s]: Invalid value: %q: must be less than or equal to %s limit of %s", path, name, req.String(), name, lim.String())})
			}
		}
	}
	for i, c := range pod.Spec.InitContainers {
		check(c.Resources, fmt.Sprintf("spec.initContainers[%d].resources", i))
	}
	for i, c := range pod.Spec.Containers {
		check(c.Resources, fmt.Sprintf("spec.containers[%d].resources", i))
	}
	if r := pod.Spec.Resources; hasPodLevel(r) {
		check(*r, "spec.resources")
		ctrOnly := &corev1.Pod{Spec: corev1.PodSpec{Containers: pod.Spec.Containers, InitContainers: pod.Spec.InitContainers}}
		aggr := resourcehelper.AggregateContainerRequests(ctrOnly, resourcehelper.PodResourcesOptions{})
		for _, name := range sortedNames(aggr) {
			podReq, ok := r.Requests[name]
			if ctr := aggr[name]; ok && ctr.Cmp(podReq) > 0 {
				v = append(v, Violation{RulePodLevelRequestsBelowContainers, fmt.Sprintf("spec.resources.requests[%s]: Invalid value: %q: must be greater than or equal to aggregate container requests of %s", name, podReq.String(), ctr.String())})
			}
		}
		for i, c := range pod.Spec.Containers {
			for _, name := range sortedNames(c.Resources.Limits) {
				podLim, ok := r.Limits[name]
				if ctrLim := c.Resources.Limits[name]; ok && ctrLim.Cmp(podLim) > 0 {
					v = append(v, Violation{RulePodLevelLimitBelowContainer, fmt.Sprintf("spec.resources.containers[%d][%s].limits (%s): Invalid value: %q: must be less than or equal to pod limits of %s", i, name, c.Name, ctrLim.String(), podLim.String())})
				}
			}
		}
	}
	if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
			for _, p := range c.ResizePolicy {
				if p.RestartPolicy != corev1.NotRequired {
					v = append(v, Violation{RuleRestartPolicyNever, fmt.Sprintf("container %q resizePolicy[%s]: must be 'NotRequired' when pod `restartPolicy` is 'Never'", c.Name, p.ResourceName)})
				}
			}
		}
	}
	return v
}

// admit mirrors the PodResizeValidator admission plugin
// (plugin/pkg/admission/podresize, on by default from 1.36). It runs only for
// bound pods and only after validation passed.
func admit(before, after *corev1.Pod, node *NodeState, h Headroom, server Version) []Violation {
	if !server.AtLeast(36) || after.Spec.NodeName == "" || node == nil {
		return nil
	}
	if missing := missingNodeFeatures(before, after, node, server); len(missing) > 0 {
		return []Violation{{RuleNodeFeatureMissing, fmt.Sprintf("pod update requires features %s which are not available on node %q: the node's kubelet must enable them (feature gates of the same name) or the pod must move", strings.Join(missing, ", "), after.Spec.NodeName)}}
	}
	if os, ok := node.Labels[corev1.LabelOSStable]; ok && os != "linux" {
		return []Violation{{RuleUnsupportedPlatform, fmt.Sprintf("pod resize is only supported on linux nodes, node %q is %q", after.Spec.NodeName, os)}}
	}
	if over := exceeds(h.Needed, h.Allocatable); len(over) > 0 {
		return []Violation{{RuleNodeCapacity, fmt.Sprintf("node didn't have enough allocatable resources: %s; lower the requests or move the pod to a larger node", strings.Join(over, "; "))}}
	}
	return nil
}

// headroom computes node arithmetic the way the scheduler counts a pod with a
// resize in flight: at the larger of its spec, allocated and actual requests
// (k8s.io/component-helpers/resource PodRequests with UseStatusResources).
func headroom(after *corev1.Pod, node *NodeState) Headroom {
	if node == nil || after.Spec.NodeName == "" {
		return Headroom{}
	}
	h := Headroom{
		Known:             true,
		Allocatable:       pick(node.Allocatable),
		RequestedByOthers: corev1.ResourceList{},
		Needed:            pick(resourcehelper.PodRequests(after, resourcehelper.PodResourcesOptions{})),
	}
	for _, name := range cpuAndMemory {
		h.RequestedByOthers[name] = resource.Quantity{Format: h.Allocatable[name].Format}
	}
	for _, p := range node.Pods {
		if p == nil || samePod(p, after) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		reqs := NodeRequests(p)
		for _, name := range cpuAndMemory {
			q := h.RequestedByOthers[name]
			q.Add(reqs[name])
			h.RequestedByOthers[name] = q
		}
	}
	h.Free = corev1.ResourceList{}
	for _, name := range cpuAndMemory {
		q := h.Allocatable[name].DeepCopy()
		q.Sub(h.RequestedByOthers[name])
		h.Free[name] = q
	}
	return h
}

func predict(after *corev1.Pod, node *NodeState, h Headroom) Prediction {
	if after.Spec.NodeName == "" {
		return Unscheduled
	}
	if !h.Known {
		return InPlace
	}
	if len(exceeds(h.Needed, h.Allocatable)) > 0 {
		// Only reachable before 1.36: later the admission plugin refuses it.
		return Infeasible
	}
	if os, ok := node.Labels[corev1.LabelOSStable]; ok && os != "linux" {
		return Infeasible
	}
	if len(exceeds(h.Needed, h.Free)) > 0 {
		return Deferred
	}
	return InPlace
}

func warnings(res *Result, server Version) []string {
	var w []string
	if !server.AtLeast(34) {
		return nil
	}
	for _, c := range res.Containers {
		bl, bok := c.Before.Limits[corev1.ResourceMemory]
		al, aok := c.After.Limits[corev1.ResourceMemory]
		if bok && aok && al.Cmp(bl) < 0 && !c.Restart {
			w = append(w, fmt.Sprintf("container %q: memory limit %s -> %s is applied in place only if current usage is below the new limit; otherwise the kubelet keeps the old limit and reports the resize in progress with an error", c.Name, bl.String(), al.String()))
		}
	}
	return w
}

// resizeSupportedByNode mirrors isPodResizeRequestSupported: the first running
// container tells whether the kubelet reports status resources.
func resizeSupportedByNode(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return c.Resources != nil
		}
	}
	return true
}

func hasPodLevel(r *corev1.ResourceRequirements) bool {
	return r != nil && len(r.Requests)+len(r.Limits) > 0
}

func hasRestartContainerPolicy(c *corev1.Container) bool {
	for _, p := range c.ResizePolicy {
		if p.RestartPolicy == corev1.RestartContainer {
			return true
		}
	}
	return false
}

func removedNames(before, after corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for name := range before {
		if _, ok := after[name]; !ok {
			out = append(out, name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// nonCPUMemoryChanges lists resources other than cpu and memory that were
// added or changed (removals are reported as ResourceRemoved).
func nonCPUMemoryChanges(bReq, aReq, bLim, aLim corev1.ResourceList) []corev1.ResourceName {
	seen := map[corev1.ResourceName]bool{}
	for _, pair := range [][2]corev1.ResourceList{{bReq, aReq}, {bLim, aLim}} {
		for name, q := range pair[1] {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
				continue
			}
			if old, ok := pair[0][name]; !ok || old.Cmp(q) != 0 {
				seen[name] = true
			}
		}
	}
	var out []corev1.ResourceName
	for name := range seen {
		out = append(out, name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func exceeds(need, have corev1.ResourceList) []string {
	var out []string
	for _, name := range cpuAndMemory {
		n, h := need[name], have[name]
		if n.Cmp(h) > 0 {
			out = append(out, fmt.Sprintf("%s, requested: %s, available: %s", name, n.String(), h.String()))
		}
	}
	return out
}

func pick(l corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, name := range cpuAndMemory {
		q := l[name]
		out[name] = q.DeepCopy()
	}
	return out
}

func samePod(a, b *corev1.Pod) bool {
	if a.UID != "" && b.UID != "" {
		return a.UID == b.UID
	}
	return a.Namespace == b.Namespace && a.Name == b.Name
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		out = append(out, name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func joinNames(names []corev1.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

func qosAdvice(before corev1.PodQOSClass) string {
	switch before {
	case corev1.PodQOSGuaranteed:
		return "a Guaranteed pod must keep requests == limits for both cpu and memory (in every container, or at pod level when pod-level resources are set)"
	case corev1.PodQOSBestEffort:
		return "a BestEffort pod has no requests or limits to resize; recreate it with requests to make it resizable"
	default:
		return "a Burstable pod must keep at least one request or limit and must not end with requests == limits for both cpu and memory everywhere"
	}
}

// missingNodeFeatures mirrors the NodeDeclaredFeatureValidator admission
// plugin (plugin/pkg/admission/nodedeclaredfeatures, on by default from 1.36):
// resizing pod-level resources or a non-sidecar init container needs the node
// to list the matching feature in status.declaredFeatures. It uses the same
// component-helpers framework the apiserver does. Unknown declared features
// (nil) skip the check.
func missingNodeFeatures(before, after *corev1.Pod, node *NodeState, server Version) []string {
	if node.DeclaredFeatures == nil {
		return nil
	}
	target := version.MajorMinor(uint(server.Major), uint(server.Minor))
	reqs, err := ndf.DefaultFramework.InferForPodUpdate(
		&ndf.PodInfo{Spec: &before.Spec, Status: &before.Status},
		&ndf.PodInfo{Spec: &after.Spec, Status: &after.Status}, target)
	if err != nil || reqs.IsEmpty() {
		return nil
	}
	res, err := ndf.DefaultFramework.MatchNode(reqs, &corev1.Node{Status: corev1.NodeStatus{DeclaredFeatures: node.DeclaredFeatures}})
	if err != nil || res.IsMatch {
		return nil
	}
	return res.UnsatisfiedRequirements
}

// Room is how much more CPU and memory the pod may request on its node now
// without its resize being Deferred or refused: the node's free allocatable
// (counted as headroom does) less the pod's own requests at the larger of spec
// and allocated. An entry is never negative. ok is false when the node is
// unknown or the pod unbound, and then nothing can be said.
func Room(pod *corev1.Pod, node *NodeState) (room corev1.ResourceList, ok bool) {
	if pod == nil {
		return nil, false
	}
	h := headroom(pod, node)
	if !h.Known {
		return nil, false
	}
	own := NodeRequests(pod)
	room = corev1.ResourceList{}
	for _, name := range cpuAndMemory {
		q := h.Free[name].DeepCopy()
		q.Sub(own[name])
		if q.Sign() < 0 {
			q = resource.Quantity{Format: q.Format}
		}
		room[name] = q
	}
	return room, true
}

// LeastRoom is, per resource, the smaller of a and b; a resource only one
// of them limits is limited by that one. Nil when neither limits any.
func LeastRoom(a, b corev1.ResourceList) corev1.ResourceList {
	if b == nil {
		return a
	}
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for r, q := range b {
		if have, ok := out[r]; !ok || q.Cmp(have) < 0 {
			out[r] = q.DeepCopy()
		}
	}
	return out
}
