package resize

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/kubectl/pkg/util/qos"

	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// Desired is what tailor wants the pod to have.
//
// A container's ResourceRequirements means "set these requests/limits
// entries": entries not mentioned keep their current value, so a caller can
// change only the cpu limit. Removing an entry has to be asked for explicitly
// through Remove / RemoveFromPod (Kubernetes refuses it, but tailor can say so
// and show why).
type Desired struct {
	// Containers by name: regular containers, sidecars and init containers.
	Containers map[string]corev1.ResourceRequirements
	// Pod is the pod-level spec.resources to set; nil leaves it unchanged.
	Pod *corev1.ResourceRequirements
	// Remove names container entries to delete, by container name.
	Remove map[string]Removal
	// RemoveFromPod names pod-level entries to delete.
	RemoveFromPod *Removal
}

// Removal lists resource entries to delete.
type Removal struct {
	Requests []corev1.ResourceName
	Limits   []corev1.ResourceName
}

// NodeState is what the planner needs to know about the pod's node.
type NodeState struct {
	// Name is the node's name.
	Name string
	// PreemptionPolicy is node.spec.podPreemptionPolicy: a node may opt
	// out of the scheduler's preemption for resizes.
	PreemptionPolicy *corev1.NodePodPreemptionPolicy
	// Allocatable is node.status.allocatable.
	Allocatable corev1.ResourceList
	// Labels are the node's labels (kubernetes.io/os matters); nil counts as linux.
	Labels map[string]string
	// DeclaredFeatures is node.status.declaredFeatures. Nil means unknown and
	// skips the check; an empty, non-nil slice means the node declares none.
	DeclaredFeatures []string
	// Pods are all pods bound to the node. The pod being resized may be among
	// them (matched by UID, else namespace/name) and is skipped; so are
	// terminal (Succeeded/Failed) pods.
	Pods []*corev1.Pod
}

// Node is the node as the scheduler's preemption reads it
// (preemption.Input.Node).
func (n *NodeState) Node() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
		Spec: corev1.NodeSpec{PodPreemptionPolicy: n.PreemptionPolicy}, Status: corev1.NodeStatus{Allocatable: n.Allocatable}}
}

// NodeRequests are the requests p's node counts for it now: for each
// container the larger of its spec and what the kubelet admitted, with
// pod-level resources and overhead, as the scheduler and the kubelet's
// admission count them while a resize is in flight.
func NodeRequests(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true})
}

// Input is everything Plan needs; gather it, then call Plan.
type Input struct {
	Pod     *corev1.Pod
	Desired Desired
	// Node is nil when unknown: node checks and headroom are skipped.
	Node   *NodeState
	Server Version
	// Rules are the namespace's LimitRanges and ResourceQuotas (quotas as
	// their status holds them), read by the caller. The apiserver applies
	// the LimitRanges' defaults to the resize, then judges it against them
	// and charges the quotas what it adds. Nil skips those checks: the
	// verdict then holds for a namespace without any.
	Rules *nsrules.Rules
}

// Outcome is the apiserver's answer to the resize request.
type Outcome string

const (
	Accepted Outcome = "Accepted"
	Refused  Outcome = "Refused"
)

// Prediction is what the kubelet will do with an accepted resize.
type Prediction string

const (
	// InPlace: the kubelet can admit the new size now (containers may still
	// restart, see ContainerChange.Restart).
	InPlace Prediction = "InPlace"
	// Deferred: the new size fits the node but not what is free now; the kubelet
	// marks PodResizePending reason Deferred and retries.
	Deferred Prediction = "Deferred"
	// Infeasible: the kubelet will never admit it (e.g. more than the node's
	// allocatable on a server without the NodeCapacity admission check).
	Infeasible Prediction = "Infeasible"
	// Unscheduled: the pod is not bound to a node; the new size is what the
	// scheduler will place.
	Unscheduled Prediction = "Unscheduled"
)

// Kind says what sort of container a ContainerChange is about.
type Kind string

const (
	KindContainer Kind = "Container"
	KindSidecar   Kind = "Sidecar"
	KindInit      Kind = "Init"
)

// ContainerChange is one container before and after the plan.
type ContainerChange struct {
	Name   string
	Kind   Kind
	Before corev1.ResourceRequirements
	After  corev1.ResourceRequirements
	// Changed is true when the container's own requests or limits change (it is then in the patch).
	Changed bool
	// Restart is true when the kubelet will restart the container to apply the
	// change: a cpu/memory request or effective limit changes and the
	// container's resizePolicy for that resource is RestartContainer. A
	// container without its own limit restarts when a pod-level limit change
	// moves its effective limit.
	Restart       bool
	RestartReason string
	// RestartForDefaults is true when the container restarts only for what
	// the namespace's LimitRanges add to the resize (Result.Defaulted).
	RestartForDefaults bool
}

// PodLevel is spec.resources before and after (nil when unset).
type PodLevel struct {
	Before, After *corev1.ResourceRequirements
}

// Headroom is the node arithmetic behind Deferred/NodeCapacity, for printing.
type Headroom struct {
	// Known is false when Input.Node was nil or the pod is unbound.
	Known       bool
	Allocatable corev1.ResourceList
	// RequestedByOthers counts each other pod at the larger of its spec,
	// allocated and actual requests, as the scheduler does during a resize.
	RequestedByOthers corev1.ResourceList
	Free              corev1.ResourceList
	// Needed is the resized pod's requests (pod-level aware, with overhead).
	Needed corev1.ResourceList
}

// Violation is one rule the resize breaks.
type Violation struct {
	Rule    Rule
	Message string
}

// Result is the plan and its predicted outcome.
type Result struct {
	Outcome Outcome
	// Rule and Message repeat Violations[0] for a refused plan.
	Rule    Rule
	Message string
	// Violations lists every broken rule; the apiserver reports them together.
	Violations []Violation
	// Predicted is set for accepted plans only.
	Predicted Prediction
	// NoChange is true when the desired resources equal the current ones:
	// nothing to send, Patch is nil.
	NoChange   bool
	QoSBefore  corev1.PodQOSClass
	QoSAfter   corev1.PodQOSClass
	Containers []ContainerChange
	// PodLevel is nil when the pod has no pod-level resources before or after.
	PodLevel *PodLevel
	Headroom Headroom
	// Warnings are things the caller should know that do not change the outcome.
	Warnings []string
	// Defaulted is what the namespace's LimitRanges add to the resize, in
	// the LimitRanger's words ("LimitRanger plugin set: cpu limit for
	// container app"); "" when nothing. The verdict, QoSAfter, the restarts
	// and AdmittedPod count it; the patch, Containers' After and AfterPod
	// do not.
	Defaulted string
	// Patch is the strategic-merge-patch body for the pod "resize" subresource.
	// It is built for refused plans too (it is what Kubernetes would refuse).
	Patch []byte

	after *corev1.Pod
	// admitted is after with the namespace's LimitRanges' defaults: the pod
	// the verdict judges and the apiserver stores.
	admitted *corev1.Pod
	// byDefaults: the refusal is a rule only the LimitRanges' defaults
	// break.
	byDefaults bool
}

// ByNamespaceRules reports whether a refused plan is refused because of
// the namespace's LimitRanges or ResourceQuotas: by one of their checks, or
// by a rule that only their defaults make the resize break.
func (r *Result) ByNamespaceRules() bool {
	return r != nil && r.Outcome == Refused && (r.Rule == RuleLimitRange || r.Rule == RuleResourceQuota || r.byDefaults)
}

// AfterPod returns the pod as it will be once the patch is applied (with the
// apiserver's defaulting), for comparing against later status. It is what
// the patch makes: what the namespace's LimitRanges add besides is in
// AdmittedPod.
func (r *Result) AfterPod() *corev1.Pod {
	if r == nil || r.after == nil {
		return nil
	}
	return r.after.DeepCopy()
}

// RestartsForDefaults names the containers the kubelet restarts only for
// what the namespace's LimitRanges add to the resize.
func (r *Result) RestartsForDefaults() []string {
	var out []string
	for _, c := range r.Containers {
		if c.RestartForDefaults {
			out = append(out, c.Name)
		}
	}
	return out
}

// RequestsForDefaults reports whether the namespace's LimitRanges add cpu or
// memory requests to the resize: the node is then asked for more than the
// patch says (Headroom counts it).
func (r *Result) RequestsForDefaults() bool {
	if r == nil || r.admitted == nil || r.after == nil || r.Defaulted == "" {
		return false
	}
	opts := resourcehelper.PodResourcesOptions{}
	sent, admitted := resourcehelper.PodRequests(r.after, opts), resourcehelper.PodRequests(r.admitted, opts)
	for _, name := range cpuAndMemory {
		if s, a := sent[name], admitted[name]; a.Cmp(s) != 0 {
			return true
		}
	}
	return false
}

// AdmittedPod is AfterPod as the apiserver admits and stores it: the
// namespace's LimitRanges' defaults (Input.Rules) added. It is the pod the
// verdict judged and the quotas are charged for.
func (r *Result) AdmittedPod() *corev1.Pod {
	if r == nil || r.admitted == nil {
		return r.AfterPod()
	}
	return r.admitted.DeepCopy()
}

// Plan predicts the apiserver's and kubelet's answer to resizing in.Pod to
// in.Desired and builds the patch. It returns an error only for malformed
// input; a resize Kubernetes would refuse is a Result with Outcome Refused.
func Plan(in Input) (*Result, error) {
	if in.Pod == nil {
		return nil, fmt.Errorf("plan resize: pod is nil")
	}
	if in.Server.Major == 0 {
		return nil, fmt.Errorf("plan resize of %s: server version is not set", podRef(in.Pod))
	}
	before := in.Pod
	after := before.DeepCopy()
	ephemeral, err := applyDesired(after, in.Desired)
	if err != nil {
		return nil, fmt.Errorf("plan resize of %s: %w", podRef(before), err)
	}
	applyDefaults(after)
	// judged is the pod the apiserver validates and admits: the patch
	// applied (after, which says every pod-level value it defaulted), then
	// the LimitRanger's defaults (a mutating admission plugin, which runs
	// before validation), then the resize strategy's pod-level defaults for
	// what is still unset.
	judged := after
	if in.Rules != nil {
		judged = in.Rules.Admitted(after)
		defaultPodLevel(judged)
	}

	res := &Result{
		QoSBefore: qos.GetPodQOS(before),
		QoSAfter:  qos.ComputePodQOS(judged),
		after:     after,
		admitted:  judged,
	}
	res.Containers = containerChanges(before, after, judged)
	if before.Spec.Resources != nil || after.Spec.Resources != nil {
		res.PodLevel = &PodLevel{Before: before.Spec.Resources.DeepCopy(), After: after.Spec.Resources.DeepCopy()}
	}
	podLevelChanged := !requirementsEqual(before.Spec.Resources, after.Spec.Resources)
	anyChanged := podLevelChanged || len(ephemeral) > 0
	for _, c := range res.Containers {
		anyChanged = anyChanged || c.Changed
	}
	if !anyChanged {
		res.Outcome = Accepted
		res.NoChange = true
		res.Predicted = InPlace
		return res, nil
	}

	res.Patch, err = buildPatch(before, after, res.Containers, podLevelChanged)
	if err != nil {
		return nil, fmt.Errorf("plan resize of %s: %w", podRef(before), err)
	}

	if !sameContainerResources(after, judged) {
		res.Defaulted = judged.Annotations[nsrules.LimitRangerAnnotation]
	}
	v := validate(before, judged, res, ephemeral, in.Server)
	res.Headroom = headroom(judged, in.Node)
	// Admission, in the apiserver's order: the LimitRanger, the node's
	// plugins, ResourceQuota last. The first to refuse answers.
	if len(v) == 0 {
		v = limitRanger(in.Rules, before, judged)
	}
	if len(v) == 0 {
		v = admit(before, judged, in.Node, res.Headroom, in.Server)
	}
	if len(v) == 0 {
		v = quota(in.Rules, before, judged)
	}
	if len(v) > 0 && res.Defaulted != "" && v[0].Rule != RuleLimitRange && v[0].Rule != RuleResourceQuota {
		// Would the resize pass without the defaults? Then they are the cause.
		undefaulted := *res
		undefaulted.QoSAfter = qos.ComputePodQOS(after)
		w := validate(before, after, &undefaulted, ephemeral, in.Server)
		if len(w) == 0 {
			w = admit(before, after, in.Node, headroom(after, in.Node), in.Server)
		}
		if len(w) == 0 {
			res.byDefaults = true
			for i := range v {
				v[i].Message += "; the namespace's LimitRanges add to the resize: " + res.Defaulted
			}
		}
	}
	if len(v) > 0 {
		res.Outcome = Refused
		res.Violations = v
		res.Rule = v[0].Rule
		res.Message = v[0].Message
		return res, nil
	}
	res.Outcome = Accepted
	res.Predicted = predict(judged, in.Node, res.Headroom)
	res.Warnings = warnings(res, in.Server)
	if res.Defaulted != "" {
		res.Warnings = append(res.Warnings, "the namespace's LimitRanges add to the resize: "+res.Defaulted)
	}
	return res, nil
}

// limitRanger is what the LimitRanger admission plugin refuses of the
// resized pod (judged: its defaults applied), each naming its LimitRange
// and container.
func limitRanger(rules *nsrules.Rules, before, judged *corev1.Pod) []Violation {
	if rules == nil {
		return nil
	}
	var v []Violation
	for _, nv := range rules.LimitRangerViolations(judged, before) {
		where := nv.Object
		if nv.Container != "" {
			where += ", container " + nv.Container
		}
		v = append(v, Violation{RuleLimitRange, fmt.Sprintf("%s (%s)", nv.Message, where)})
	}
	return v
}

// quota is what the ResourceQuota admission plugin refuses of the resize:
// one violation per quota, in the apiserver's words, which name it.
func quota(rules *nsrules.Rules, before, judged *corev1.Pod) []Violation {
	if rules == nil {
		return nil
	}
	var v []Violation
	for _, nv := range rules.QuotaViolations(judged, before) {
		if len(v) > 0 && v[len(v)-1].Message == nv.Message {
			continue
		}
		v = append(v, Violation{RuleResourceQuota, nv.Message})
	}
	return v
}

// applyDesired writes the desired entries into pod. It returns the names of
// ephemeral containers the caller asked to resize (never resizable).
func applyDesired(pod *corev1.Pod, d Desired) ([]string, error) {
	var ephemeral []string
	find := func(name string) (*corev1.Container, bool, error) {
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == name {
				return &pod.Spec.Containers[i], false, nil
			}
		}
		for i := range pod.Spec.InitContainers {
			if pod.Spec.InitContainers[i].Name == name {
				return &pod.Spec.InitContainers[i], false, nil
			}
		}
		for i := range pod.Spec.EphemeralContainers {
			if pod.Spec.EphemeralContainers[i].Name == name {
				return nil, true, nil
			}
		}
		return nil, false, fmt.Errorf("container %q is not in the pod; valid names: %s", name, strings.Join(containerNames(pod), ", "))
	}

	for _, name := range sortedKeys(d.Containers) {
		want := d.Containers[name]
		if err := checkQuantities(name, want); err != nil {
			return nil, err
		}
		c, isEphemeral, err := find(name)
		if err != nil {
			return nil, err
		}
		if isEphemeral {
			if len(want.Requests)+len(want.Limits) > 0 {
				ephemeral = append(ephemeral, name)
			}
			continue
		}
		c.Resources.Requests = setEntries(c.Resources.Requests, want.Requests)
		c.Resources.Limits = setEntries(c.Resources.Limits, want.Limits)
	}
	for _, name := range sortedKeys(d.Remove) {
		c, isEphemeral, err := find(name)
		if err != nil {
			return nil, err
		}
		if isEphemeral {
			continue
		}
		rm := d.Remove[name]
		c.Resources.Requests = deleteEntries(c.Resources.Requests, rm.Requests)
		c.Resources.Limits = deleteEntries(c.Resources.Limits, rm.Limits)
	}
	if d.Pod != nil {
		if err := checkQuantities("pod-level resources", *d.Pod); err != nil {
			return nil, err
		}
		if len(d.Pod.Requests)+len(d.Pod.Limits) > 0 {
			if pod.Spec.Resources == nil {
				pod.Spec.Resources = &corev1.ResourceRequirements{}
			}
			pod.Spec.Resources.Requests = setEntries(pod.Spec.Resources.Requests, d.Pod.Requests)
			pod.Spec.Resources.Limits = setEntries(pod.Spec.Resources.Limits, d.Pod.Limits)
		}
	}
	if d.RemoveFromPod != nil && pod.Spec.Resources != nil {
		pod.Spec.Resources.Requests = deleteEntries(pod.Spec.Resources.Requests, d.RemoveFromPod.Requests)
		pod.Spec.Resources.Limits = deleteEntries(pod.Spec.Resources.Limits, d.RemoveFromPod.Limits)
	}
	return ephemeral, nil
}

func checkQuantities(owner string, r corev1.ResourceRequirements) error {
	for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
		for name, q := range l {
			if q.Sign() < 0 {
				return fmt.Errorf("%s: %s %s is negative", owner, name, q.String())
			}
		}
	}
	if len(r.Claims) > 0 {
		return fmt.Errorf("%s: resource claims cannot be resized; leave Claims empty", owner)
	}
	return nil
}

// applyDefaults mirrors the apiserver's defaulting of a patched pod: a
// container limit without a request defaults the request
// (pkg/apis/core/v1/defaults.go, SetDefaults_Pod), and pod-level resources
// are completed (pkg/api/pod/util.go, DefaultPodLevelResources, run by the
// resize strategy's PrepareForUpdate). Predicting the QoS class needs both.
func applyDefaults(pod *corev1.Pod) {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			r := &list[i].Resources
			if r.Limits == nil {
				continue
			}
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					r.Requests[name] = q.DeepCopy()
				}
			}
		}
	}
	defaultPodLevel(pod)
}

func defaultPodLevel(pod *corev1.Pod) {
	r := pod.Spec.Resources
	if r == nil || len(r.Requests)+len(r.Limits) == 0 {
		return
	}
	ctrOnly := &corev1.Pod{Spec: corev1.PodSpec{Containers: pod.Spec.Containers, InitContainers: pod.Spec.InitContainers}}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	aggrReqs := resourcehelper.AggregateContainerRequests(ctrOnly, resourcehelper.PodResourcesOptions{})
	for name, q := range aggrReqs {
		if _, ok := r.Requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			r.Requests[name] = q
		}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			r.Requests[name] = q.DeepCopy()
		}
	}
	if len(r.Requests) == 0 {
		r.Requests = nil
	}
	// A pod-level limit is defaulted only when every container (init and
	// sidecar included) has a limit for that resource.
	var candidates []corev1.ResourceName
	for name := range r.Requests {
		if _, ok := r.Limits[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			candidates = append(candidates, name)
		}
	}
	candidates = slices.DeleteFunc(candidates, func(name corev1.ResourceName) bool {
		for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
			if _, ok := c.Resources.Limits[name]; !ok {
				return true
			}
		}
		return false
	})
	if len(candidates) == 0 {
		return
	}
	aggrLims := resourcehelper.AggregateContainerLimits(ctrOnly, resourcehelper.PodResourcesOptions{})
	for _, name := range candidates {
		val, ok := aggrLims[name]
		if !ok {
			continue
		}
		if req := r.Requests[name]; req.Cmp(val) > 0 {
			val = req
		}
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[name] = val
	}
}

// containerChanges compares each container of before with sent, what the
// patch makes of it; the kubelet restarts it for what judged, the pod the
// apiserver admits (the LimitRanges' defaults in), changes.
func containerChanges(before, sent, judged *corev1.Pod) []ContainerChange {
	var out []ContainerChange
	add := func(b, s, a *corev1.Container, kind Kind) {
		cc := ContainerChange{
			Name:    b.Name,
			Kind:    kind,
			Before:  *b.Resources.DeepCopy(),
			After:   *s.Resources.DeepCopy(),
			Changed: !listEqual(b.Resources.Requests, s.Resources.Requests) || !listEqual(b.Resources.Limits, s.Resources.Limits),
		}
		cc.Restart, cc.RestartReason = restartNeeded(before, judged, b, a)
		if cc.Restart && judged != sent {
			own, _ := restartNeeded(before, sent, b, s)
			cc.RestartForDefaults = !own
		}
		out = append(out, cc)
	}
	for i := range before.Spec.InitContainers {
		kind := KindInit
		if podcontainers.IsSidecar(&before.Spec.InitContainers[i]) {
			kind = KindSidecar
		}
		add(&before.Spec.InitContainers[i], &sent.Spec.InitContainers[i], &judged.Spec.InitContainers[i], kind)
	}
	for i := range before.Spec.Containers {
		add(&before.Spec.Containers[i], &sent.Spec.Containers[i], &judged.Spec.Containers[i], KindContainer)
	}
	return out
}

// sameContainerResources reports whether a and b, one pod's two versions,
// give every container the same requests and limits.
func sameContainerResources(a, b *corev1.Pod) bool {
	for _, pair := range [][2][]corev1.Container{{a.Spec.InitContainers, b.Spec.InitContainers}, {a.Spec.Containers, b.Spec.Containers}} {
		for i := range pair[0] {
			ra, rb := pair[0][i].Resources, pair[1][i].Resources
			if !listEqual(ra.Requests, rb.Requests) || !listEqual(ra.Limits, rb.Limits) {
				return false
			}
		}
	}
	return true
}

// restartNeeded mirrors the kubelet's computePodResizeAction
// (pkg/kubelet/kuberuntime/kuberuntime_manager.go): for cpu and memory it
// compares requests and effective limits (the container's own limit, else the
// pod-level limit, per containerResourcesFromRequirements) and restarts when a
// changed resource has resizePolicy RestartContainer. A missing policy means
// NotRequired.
func restartNeeded(beforePod, afterPod *corev1.Pod, b, a *corev1.Container) (bool, string) {
	var reasons []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if policyFor(a, name) != corev1.RestartContainer {
			continue
		}
		bReq, aReq := b.Resources.Requests[name], a.Resources.Requests[name]
		if bReq.Cmp(aReq) != 0 {
			reasons = append(reasons, fmt.Sprintf("%s request %s -> %s", name, fmtQ(b.Resources.Requests, name), fmtQ(a.Resources.Requests, name)))
		}
		bLim, bFrom := effectiveLimit(beforePod, b, name)
		aLim, aFrom := effectiveLimit(afterPod, a, name)
		if bLim.Cmp(aLim) != 0 {
			via := ""
			if bFrom == "pod" || aFrom == "pod" {
				via = " (effective limit from the pod-level limit)"
			}
			reasons = append(reasons, fmt.Sprintf("%s limit %s -> %s%s", name, qstr(bLim), qstr(aLim), via))
		}
	}
	if len(reasons) == 0 {
		return false, ""
	}
	return true, strings.Join(reasons, "; ") + " with resizePolicy RestartContainer"
}

func effectiveLimit(pod *corev1.Pod, c *corev1.Container, name corev1.ResourceName) (resource.Quantity, string) {
	if q, ok := c.Resources.Limits[name]; ok {
		return q, "container"
	}
	if pod.Spec.Resources != nil {
		if q, ok := pod.Spec.Resources.Limits[name]; ok {
			return q, "pod"
		}
	}
	return resource.Quantity{}, ""
}

func policyFor(c *corev1.Container, name corev1.ResourceName) corev1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == name {
			return p.RestartPolicy
		}
	}
	return corev1.NotRequired
}

func containerNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	return names
}

func podRef(pod *corev1.Pod) string {
	if pod.Namespace == "" {
		return "pod " + pod.Name
	}
	return "pod " + pod.Namespace + "/" + pod.Name
}

func setEntries(dst, src corev1.ResourceList) corev1.ResourceList {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = corev1.ResourceList{}
	}
	for name, q := range src {
		dst[name] = q.DeepCopy()
	}
	return dst
}

func deleteEntries(dst corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	for _, n := range names {
		delete(dst, n)
	}
	return dst
}

// listEqual compares quantities by value: "1" and "1000m" are the same cpu.
func listEqual(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

func requirementsEqual(a, b *corev1.ResourceRequirements) bool {
	var ar, al, br, bl corev1.ResourceList
	if a != nil {
		ar, al = a.Requests, a.Limits
	}
	if b != nil {
		br, bl = b.Requests, b.Limits
	}
	return listEqual(ar, br) && listEqual(al, bl)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func fmtQ(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return "unset"
	}
	return q.String()
}

func qstr(q resource.Quantity) string {
	if q.IsZero() {
		return "unset"
	}
	return q.String()
}
