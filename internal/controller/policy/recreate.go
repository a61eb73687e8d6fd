package policy

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/resize"
)

// Event reasons of InPlaceOrRecreate.
const (
	EventEvicted         = "Evicted"
	EventEvictionBlocked = "EvictionBlocked"
)

// Defaults of InPlaceOrRecreate.
const (
	// DefaultRecreateAfter is how long a raise must find no room in place
	// before the pod is evicted, as VerticalPodAutoscaler waits on a
	// Deferred in-place resize.
	DefaultRecreateAfter = 5 * time.Minute
	// RecreationTTL is how long a replacement may take to be created and
	// still get the recommended resources from status.recreations.
	RecreationTTL = 10 * time.Minute
	// AdmissionSettle is how long an entry stays in status.recreations
	// before its pod is evicted. The admission policy reads TailorPolicies
	// from the apiserver's own informer, which trails a status write; the
	// owner's controller can create the replacement within milliseconds of
	// an eviction, before that informer has the entry, and the pod would
	// then be admitted at its template's size.
	AdmissionSettle = time.Second
)

// stateEvicted is the podState result of a pod tailor evicted.
const stateEvicted = "Evicted"

// considerRecreate runs while a raise finds no room on the pod's node. In
// mode InPlaceOrRecreate, once that has lasted recreateAfter, it writes to
// status.recreations the resources its replacement is to be created with
// and, on a sync at least AdmissionSettle later, evicts the pod through the
// Eviction API (PodDisruptionBudgets decide). It evicts only a pod some
// controller will recreate and some node can hold at the recommended size,
// and at most one pod per policy per minResizeInterval. It returns whether
// the pod was evicted, and when to look again.
func (r *Reconciler) considerRecreate(ctx context.Context, policy *v1alpha1.TailorPolicy, in *syncInput, p *corev1.Pod,
	now time.Time, blocked map[string]string) (bool, time.Duration, error) {
	state := in.state
	ps := state.pod(p)
	if ps.shortSince.IsZero() {
		ps.shortSince = now
	}
	after := DefaultRecreateAfter
	if u := policy.Spec.UpdatePolicy; u != nil && u.RecreateAfter != nil {
		after = u.RecreateAfter.Duration
	}
	if wait := ps.shortSince.Add(after).Sub(now); wait > 0 {
		return false, wait, nil
	}
	interval := autoscale.MinResizeInterval(&policy.Spec)
	if wait := state.lastEviction.Add(interval).Sub(now); !state.lastEviction.IsZero() && wait > 0 {
		blocked["EvictionPaced"] = fmt.Sprintf("another pod was evicted %s ago; minResizeInterval is %s", now.Sub(state.lastEviction).Round(time.Second), interval)
		return false, wait, nil
	}
	if wait := ps.evictionBlocked.until.Sub(now); wait > 0 {
		blocked[ps.evictionBlocked.reason] = ps.evictionBlocked.message
		return false, wait, nil
	}
	// A refusal is retried after minResizeInterval, not every sync: each
	// attempt writes status.recreations first, and a PodDisruptionBudget
	// rarely changes its mind within seconds.
	block := func(reason, msg string) (bool, time.Duration, error) {
		state.dropPendingRecreation(p)
		msg = "pod " + p.Name + " not evicted: " + msg
		blocked[reason] = msg
		ps.evictionBlocked = evictionBlock{reason: reason, message: msg, until: now.Add(interval)}
		r.reportOnce(ps, p, policy, "recreate:"+reason, EventEvictionBlocked, msg)
		return false, interval, nil
	}

	owner, err := autoscale.Recreatable(p)
	if err != nil {
		return block("NotRecreatable", err.Error())
	}
	if p.Spec.Resources != nil {
		return block("PodLevelResources", "its replacement could not get its pod-level resources: the admission policy sets containers' only")
	}
	containers, err := r.recreation(in, p)
	if err != nil {
		return block("NotPlannable", err.Error())
	}
	if len(containers) == 0 {
		return false, r.SyncPeriod, nil
	}
	nodes, err := r.nodesWithPods(ctx)
	if err != nil {
		return false, 0, err
	}
	if _, ok := autoscale.Placeable(p, containers, nodes); !ok {
		return block("NoNodeFits", fmt.Sprintf("no node could hold it at %s, even counting lower-priority pods as preempted; raised in place as far as its node allows", containersText(containers)))
	}

	// First sync: write the replacement's resources, which it reads from
	// status at admission. A later one evicts, once they have settled and
	// only if they are still what the pod needs.
	rc, pending := state.recreations[owner.UID]
	if !pending || rc.EvictedPod != p.Name || !apiequality.Semantic.DeepEqual(rc.Containers, containers) {
		state.recreations[owner.UID] = v1alpha1.Recreation{
			OwnerUID: string(owner.UID), OwnerKind: owner.Kind, OwnerName: owner.Name, EvictedPod: p.Name,
			EvictionTime: metav1.NewTime(now), Containers: containers,
		}
		st := policy.Status.DeepCopy()
		st.Recreations = state.recreationList(now)
		if err := r.writeStatus(ctx, policy, st); err != nil {
			delete(state.recreations, owner.UID)
			return false, 0, err
		}
		return false, AdmissionSettle, nil
	}
	if wait := rc.EvictionTime.Add(AdmissionSettle).Sub(now); wait > 0 {
		return false, wait, nil
	}

	uid := p.UID
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	if err := r.Client.SubResource("eviction").Create(ctx, p, eviction); err != nil {
		evictionsTotal.WithLabelValues(policy.Namespace, policy.Name, "blocked").Inc()
		switch {
		case apierrors.IsTooManyRequests(err):
			return block("EvictionBlocked", "a PodDisruptionBudget does not allow it now: "+err.Error())
		case apierrors.IsForbidden(err):
			return block("EvictionForbidden", "the manager may not evict pods (install config/components/eviction, or set evictions.enabled in the Helm chart): "+err.Error())
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			return false, time.Second, nil
		}
		return false, 0, fmt.Errorf("evicting pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	state.lastEviction = now
	ps.lastResize, ps.result, ps.outcome = now, stateEvicted, stateEvicted
	ps.message = fmt.Sprintf("evicted to be recreated by %s %s with %s: its node has no room in place", owner.Kind, owner.Name, containersText(containers))
	evictionsTotal.WithLabelValues(policy.Namespace, policy.Name, "evicted").Inc()
	r.Events.Eventf(p, policy, corev1.EventTypeNormal, EventEvicted, "Evict", "%s", ps.message)
	log.FromContext(ctx).Info("pod evicted for recreation", "pod", klog.KObj(p), "owner", owner.Name, "resources", containersText(containers))
	return true, 0, nil
}

// recreation is what p's replacement is to be created with: the whole
// recommendation, not what fits on p's node, shaped by the same rules as an
// in-place resize and checked by the planner, so a replacement is never
// admitted in another QoS class or with a request above its limit.
func (r *Reconciler) recreation(in *syncInput, p *corev1.Pod) ([]v1alpha1.RecreatedContainer, error) {
	var pin autoscale.PodInput
	for _, candidate := range in.decision.Pods {
		if candidate.Pod.UID == p.UID {
			pin = candidate
		}
	}
	full, err := autoscale.Decide(autoscale.Input{
		Pod: p, Spec: in.decision.Spec, Targets: pin.Targets, WorkingSet: pin.WorkingSet,
		MemoryFloorHeadroom: MemoryFloorHeadroom, Now: in.decision.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("deciding the replacement's resources: %w", err)
	}
	plan, err := resize.Plan(resize.Input{Pod: p, Desired: full.Desired, Server: r.Actuator.Server.Version})
	if err != nil {
		return nil, fmt.Errorf("planning the replacement's resources: %w", err)
	}
	if plan.Outcome == resize.Refused {
		return nil, fmt.Errorf("its replacement's resources break rule %s: %s", plan.Rule, plan.Message)
	}
	return autoscale.RecreatedContainers(p, full.Desired), nil
}

// evictionBlock is why a pod was last not evicted, and until when tailor
// does not ask again.
type evictionBlock struct {
	reason, message string
	until           time.Time
}

// nodesWithPods lists every node with the pods bound to it.
func (r *Reconciler) nodesWithPods(ctx context.Context) ([]autoscale.NodePods, error) {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := make([]autoscale.NodePods, 0, len(nodes.Items))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": n.Name}); err != nil {
			return nil, fmt.Errorf("listing pods on node %s: %w", n.Name, err)
		}
		np := autoscale.NodePods{Node: n}
		for j := range pods.Items {
			np.Pods = append(np.Pods, &pods.Items[j])
		}
		out = append(out, np)
	}
	return out, nil
}

// dropPendingRecreation takes back an entry written for p that was not
// followed by its eviction: new pods of the owner must not get resources
// meant for a replacement. An entry whose pod was evicted stays: its
// replacement may not be created yet.
func (s *policyState) dropPendingRecreation(p *corev1.Pod) {
	if ps, ok := s.pods[p.UID]; ok && ps.result == stateEvicted {
		return
	}
	for uid, rc := range s.recreations {
		if rc.EvictedPod == p.Name {
			delete(s.recreations, uid)
		}
	}
}

// recreationList is the unexpired recreations, sorted, for status.
func (s *policyState) recreationList(now time.Time) []v1alpha1.Recreation {
	var out []v1alpha1.Recreation
	for uid, rc := range s.recreations {
		if now.Sub(rc.EvictionTime.Time) >= RecreationTTL {
			delete(s.recreations, uid)
			continue
		}
		out = append(out, rc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OwnerUID < out[j].OwnerUID })
	return out
}

func containersText(cs []v1alpha1.RecreatedContainer) string {
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
