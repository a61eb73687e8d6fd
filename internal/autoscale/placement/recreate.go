package placement

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	qosutil "k8s.io/kubectl/pkg/util/qos"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
)

// Recreatable says whether evicting p gets it recreated somewhere else: only
// a pod whose controller makes a replacement the scheduler places anew. It
// returns the controller's reference, or why not.
func Recreatable(p *corev1.Pod) (*metav1.OwnerReference, error) {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return nil, fmt.Errorf("pod has no controller: nothing would recreate it")
	}
	switch ref.Kind {
	case "ReplicaSet", "StatefulSet", "ReplicationController":
		return ref, nil
	case "DaemonSet":
		return nil, fmt.Errorf("pod of DaemonSet %s: its replacement would return to the same node", ref.Name)
	}
	return nil, fmt.Errorf("pod of %s %s: tailor only recreates pods of ReplicaSets, StatefulSets and ReplicationControllers", ref.Kind, ref.Name)
}

// RecreatedContainers is each container of p that its replacement must be
// created with other than its template says: those desired changes, with
// desired applied, and those resized in place since (by tailor or anyone),
// at what they have now. Each gets every cpu and memory request and limit
// it will be recreated with, so the replacement matches the pod as tailor
// would have resized it in place (a container left at its template's values
// would lose what it was raised to: a memory limit an OOM kill raised, a
// request above its working set), and the cpu and memory the container has
// in template, the owner's pod template the replacement is created from (p
// itself was resized since it was created, so its values are not the
// template's). The admission policy applies the entry only to a new pod
// whose containers have exactly those. Nothing when desired changes none.
//
// It fails when template cannot vouch for the entry: a container it lacks,
// or one that sets other cpu or memory requests or limits than p's (p was
// not created from it: a rollout, or an edit since). Applied over such a
// template the entry would give the replacement a mix of the two, which
// the apiserver may refuse (a request above a limit the edit added).
func RecreatedContainers(p *corev1.Pod, template *corev1.PodTemplateSpec, desired resize.Desired) ([]v1alpha1.RecreatedContainer, error) {
	if template == nil {
		return nil, fmt.Errorf("the owner's pod template is not known")
	}
	if len(desired.Containers) == 0 {
		return nil, nil
	}
	tp := &corev1.Pod{Spec: template.Spec}
	containers := podcontainers.Running(&p.Spec)
	sort.Slice(containers, func(i, j int) bool { return containers[i].Name < containers[j].Name })
	var out []v1alpha1.RecreatedContainer
	for _, c := range containers {
		n := c.Name
		want, changed := desired.Containers[n]
		tc := podcontainers.Named(tp, n)
		if tc == nil {
			return nil, fmt.Errorf("container %s is not in the owner's pod template", n)
		}
		rc := v1alpha1.RecreatedContainer{Name: n}
		same := true
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			podReq, hasPodReq := c.Resources.Requests[r]
			podLim, hasPodLim := c.Resources.Limits[r]
			tmplReq, hasTmplReq := tc.Resources.Requests[r]
			tmplLim, hasTmplLim := tc.Resources.Limits[r]
			if hasPodReq != hasTmplReq || hasPodLim != hasTmplLim {
				return nil, fmt.Errorf("container %s sets other %s requests or limits than the owner's pod template: the pod was not created from it", n, r)
			}
			same = same && podReq.Cmp(tmplReq) == 0 && podLim.Cmp(tmplLim) == 0
			newpods.SetEntry(&rc.TemplateRequests, r, tc.Resources.Requests)
			newpods.SetEntry(&rc.TemplateLimits, r, tc.Resources.Limits)
			if q, ok := pickQuantity(want.Requests, c.Resources.Requests, r); ok {
				if rc.Requests == nil {
					rc.Requests = corev1.ResourceList{}
				}
				rc.Requests[r] = q
			}
			if q, ok := pickQuantity(want.Limits, c.Resources.Limits, r); ok {
				if rc.Limits == nil {
					rc.Limits = corev1.ResourceList{}
				}
				rc.Limits[r] = q
			}
		}
		if !changed && same {
			// Its template creates it as it runs.
			continue
		}
		out = append(out, rc)
	}
	return out, nil
}

func pickQuantity(want, have corev1.ResourceList, r corev1.ResourceName) (resource.Quantity, bool) {
	if q, ok := want[r]; ok {
		return q.DeepCopy(), true
	}
	q, ok := have[r]
	return q.DeepCopy(), ok
}

// RecreateInput is what DecideRecreate needs about a pod whose raise finds
// no room on its node, in mode InPlaceOrRecreate.
type RecreateInput struct {
	Pod    fleet.PodInput
	Spec   *v1alpha1.TailorPolicySpec
	Server resize.Version
	// MemoryFloorHeadroom is as for PolicyInput.
	MemoryFloorHeadroom float64
	// ShortSince is when the raise first found no room, in a run not since
	// interrupted.
	ShortSince time.Time
	// RecreateAfter is how long that must last before an eviction.
	RecreateAfter time.Duration
	// LastEviction is the policy's last eviction (zero: none), which paces
	// them to one per minResizeInterval.
	LastEviction time.Time
	// BlockedUntil is when the pod's last refused eviction may be asked
	// again; BlockedReason and BlockedMessage say why it was refused.
	BlockedUntil                  time.Time
	BlockedReason, BlockedMessage string
	// Template is the pod template the pod's owner creates the replacement
	// from, as last read; nil when not known (a selector policy names no
	// workload to read it from).
	Template *corev1.PodTemplateSpec
	// Generation is the policy's metadata.generation: the entry is planned
	// for it, and the admission policy applies only an entry planned for
	// the generation the policy has.
	Generation int64
	// Entry is the status.recreations entry already written for the pod's
	// owner, if any.
	Entry *v1alpha1.Recreation
	// Settle is how long an entry must have stood before its pod is
	// evicted: the apiserver's admission policy reads it from an informer
	// that trails the status write.
	Settle time.Duration
	// Nodes are every node with its pods; nil until the decision asks for
	// them (RecreateNeedNodes), since listing them costs.
	Nodes []NodePods
	Now   time.Time
	// Holds are as for PolicyInput: the replacement keeps those requests.
	Holds ownership.Holds
	// Rules are as for PolicyInput: the replacement is created within the
	// namespace's LimitRanges, and charged to its quotas for what it asks
	// beyond the pod it replaces.
	Rules *nsrules.Rules
}

// RecreateStep is what to do about the pod now.
type RecreateStep string

const (
	// RecreateWait: nothing yet; look again after RetryAfter.
	RecreateWait RecreateStep = "Wait"
	// RecreateBlocked: the pod cannot be evicted now, for Reason.
	RecreateBlocked RecreateStep = "Blocked"
	// RecreateNeedNodes: call again with Nodes.
	RecreateNeedNodes RecreateStep = "NeedNodes"
	// RecreateRecord: write the replacement's resources to
	// status.recreations; the eviction comes a later sync.
	RecreateRecord RecreateStep = "Record"
	// RecreateEvict: evict the pod through the Eviction API.
	RecreateEvict RecreateStep = "Evict"
)

// RecreateDecision is DecideRecreate's answer.
type RecreateDecision struct {
	Step RecreateStep
	// Reason and Message say why for Blocked and for a paced Wait.
	Reason, Message string
	RetryAfter      time.Duration
	// Owner and Containers are the replacement's maker and resources, for
	// Record and Evict; Generation is the policy generation they are
	// planned for.
	Owner      *metav1.OwnerReference
	Containers []v1alpha1.RecreatedContainer
	Generation int64
}

// DecideRecreate decides, for a pod whose raise has found no room on its
// node, whether and when to evict it so that its controller recreates it
// elsewhere at the recommended size: only after RecreateAfter, one pod per
// policy per minResizeInterval, only a pod a controller recreates, whose
// replacement's resources pass the same rules as an in-place resize and
// which some node can hold; the replacement's resources are recorded first
// and the pod evicted only once they have settled.
func DecideRecreate(in RecreateInput) (RecreateDecision, error) {
	p := in.Pod.Pod
	if wait := in.ShortSince.Add(in.RecreateAfter).Sub(in.Now); wait > 0 {
		return RecreateDecision{Step: RecreateWait, RetryAfter: wait}, nil
	}
	interval := podchange.MinResizeInterval(in.Spec)
	if wait := in.LastEviction.Add(interval).Sub(in.Now); !in.LastEviction.IsZero() && wait > 0 {
		return RecreateDecision{Step: RecreateWait, RetryAfter: wait, Reason: "EvictionPaced",
			Message: fmt.Sprintf("another pod was evicted %s ago; minResizeInterval is %s", in.Now.Sub(in.LastEviction).Round(time.Second), interval)}, nil
	}
	if wait := in.BlockedUntil.Sub(in.Now); wait > 0 {
		return RecreateDecision{Step: RecreateWait, RetryAfter: wait, Reason: in.BlockedReason, Message: in.BlockedMessage}, nil
	}
	// A refusal is retried after minResizeInterval, not every sync: each
	// attempt writes status.recreations first, and a PodDisruptionBudget
	// rarely changes its mind within seconds.
	blocked := func(reason, msg string) (RecreateDecision, error) {
		return RecreateDecision{Step: RecreateBlocked, Reason: reason, Message: msg, RetryAfter: interval}, nil
	}
	owner, err := Recreatable(p)
	if err != nil {
		return blocked("NotRecreatable", err.Error())
	}
	if p.Spec.Resources != nil {
		return blocked("PodLevelResources", "its replacement could not get its pod-level resources: the admission policy sets containers' only")
	}
	if in.Template == nil {
		// The entry must name the template values it was planned from, so
		// that a template edited since is not given it; the pod itself was
		// resized and no longer has them.
		return blocked("NoTemplate", "its owner's pod template is not known (a selector policy names no workload to read it from), "+
			"so its replacement's resources could not be tied to the template they suit; set targetRef to recreate pods")
	}
	// The replacement gets the whole recommendation, not what fits here,
	// shaped by the same rules as an in-place resize and checked by the
	// planner, so it is never admitted in another QoS class.
	full, err := podchange.Decide(podchange.Input{Pod: p, Spec: in.Spec, Targets: in.Pod.Targets, WorkingSet: in.Pod.WorkingSet, JVM: in.Pod.JVM,
		MemoryFloorHeadroom: in.MemoryFloorHeadroom, Now: in.Now, Holds: in.Holds, Rules: in.Rules, LimitRatio: podchange.MemoryLimitRatios(in.Template)})
	if err != nil {
		return RecreateDecision{}, fmt.Errorf("deciding the replacement's resources: %w", err)
	}
	plan, err := resize.Plan(resize.Input{Pod: p, Desired: full.Desired, Server: in.Server, Rules: in.Rules})
	if err != nil {
		return RecreateDecision{}, fmt.Errorf("planning the replacement's resources: %w", err)
	}
	if plan.ByNamespaceRules() {
		return blocked(string(fleet.HoldNamespaceRules), fmt.Sprintf("the apiserver would refuse its replacement (rule %s): %s", plan.Rule, plan.Message))
	}
	if plan.Outcome == resize.Refused {
		return blocked("NotPlannable", fmt.Sprintf("its replacement's resources break rule %s: %s", plan.Rule, plan.Message))
	}
	// Planned from, and recorded with, the values the replacement is
	// created with before the recreation policy sees it: a template that
	// leaves a value to a LimitRange's default (or a request to its limit)
	// would otherwise never match, and the pod be evicted for nothing.
	template := newpods.AdmittedTemplate(in.Rules, in.Template)
	containers, err := RecreatedContainers(p, template, full.Desired)
	if err != nil {
		return blocked("TemplateChanged", fmt.Sprintf("its replacement would not be created as it was: %v", err))
	}
	if len(containers) == 0 {
		return RecreateDecision{Step: RecreateWait}, nil
	}
	if was, now := replacementQoS(template, containers); was != now {
		// The decision kept the running pod's class; the replacement's
		// other containers are the template's, which the LimitRanges may
		// have defaulted otherwise than the running pod's.
		return blocked("QoSChange", fmt.Sprintf("its replacement would be %s, where a pod of its template is %s: the template's other containers, as the namespace's LimitRanges default them, differ from the running pod's", now, was))
	}
	if in.Nodes == nil {
		return RecreateDecision{Step: RecreateNeedNodes}, nil
	}
	if _, ok := Placeable(p, containers, in.Nodes); !ok {
		return blocked("NoNodeFits", fmt.Sprintf("no node could hold it at %s, even counting lower-priority pods as preempted; raised in place as far as its node allows", ContainersText(containers)))
	}
	d := RecreateDecision{Owner: owner, Containers: containers, Generation: in.Generation}
	if e := in.Entry; e == nil || e.EvictedPod != p.Name || e.ObservedGeneration != in.Generation ||
		!apiequality.Semantic.DeepEqual(e.Containers, containers) {
		d.Step, d.RetryAfter = RecreateRecord, in.Settle
		return d, nil
	}
	if wait := in.Entry.EvictionTime.Add(in.Settle).Sub(in.Now); wait > 0 {
		d.Step, d.RetryAfter = RecreateWait, wait
		return d, nil
	}
	d.Step = RecreateEvict
	return d, nil
}

// replacementQoS is the QoS class of a pod created from template (as
// admittedTemplate gives it), then with cs applied.
func replacementQoS(template *corev1.PodTemplateSpec, cs []v1alpha1.RecreatedContainer) (was, now corev1.PodQOSClass) {
	pod := &corev1.Pod{Spec: *template.Spec.DeepCopy()}
	was = qosutil.ComputePodQOS(pod)
	for _, rc := range cs {
		c := podcontainers.Named(pod, rc.Name)
		if c == nil {
			continue
		}
		c.Resources.Requests = mergeList(c.Resources.Requests, rc.Requests)
		c.Resources.Limits = mergeList(c.Resources.Limits, rc.Limits)
	}
	return was, qosutil.ComputePodQOS(pod)
}

// ContainersText says what a replacement's containers get, for people.
func ContainersText(cs []v1alpha1.RecreatedContainer) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		s := c.Name
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Requests[r]; ok {
				s += fmt.Sprintf(" %s request %s", r, q.String())
			}
			if q, ok := c.Limits[r]; ok {
				s += fmt.Sprintf(" limit %s", q.String())
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
