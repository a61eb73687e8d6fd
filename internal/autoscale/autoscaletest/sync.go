package autoscaletest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale"
	"github.com/tailorhq/tailor/internal/autoscale/fleet"
	"github.com/tailorhq/tailor/internal/autoscale/newpods"
	"github.com/tailorhq/tailor/internal/autoscale/placement"
	"github.com/tailorhq/tailor/internal/boost"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/nsrules/nsrulestest"
	"github.com/tailorhq/tailor/internal/ownership"
	"github.com/tailorhq/tailor/internal/podchange"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/resize"
)

// Namespace is the namespace every pod of a SyncCase is in.
const Namespace = "ns"

// SyncSettle is the Settle of every SyncCase's syncs: the controller's
// AdmissionSettle.
const SyncSettle = time.Second

// SyncCase is one namespace as the policy controller finds it at a sync:
// workloads and their pods (running, and waiting for a node), several
// TailorPolicies over them, whose claims may overlap, the
// HorizontalPodAutoscalers and VerticalPodAutoscalers of the workloads, the
// namespace's LimitRanges and ResourceQuotas, and the cluster's nodes; and,
// for each policy, the SyncInput the controller gathers for it.
type SyncCase struct {
	Policies []Policy
	// Pods are every pod of the namespace, bound or not.
	Pods []*corev1.Pod
	// Chains are the pods' controller chains, by UID, as the controller
	// builds them (ownership.ControllerChain over the ReplicaSets it knows).
	Chains map[types.UID]ownership.Chain
	HPAs   []autoscalingv2.HorizontalPodAutoscaler
	VPAs   []ownership.VPA
	Rules  *nsrules.Rules
	// Nodes are every node of the cluster with the pods bound to it (the
	// namespace's and others'): what a recreation is decided against once
	// the decision asks for them (autoscale.NodesWanted).
	Nodes []placement.NodePods
	// Templates are the pod templates of the workloads, by workload.
	Templates map[ownership.Workload]*corev1.PodTemplateSpec
	// PodTemplates are the templates each pod's controller creates its
	// pods from (a replacement of the pod comes from it), by UID; none for
	// a bare pod.
	PodTemplates map[types.UID]*corev1.PodTemplateSpec
	// Syncs are each policy's SyncInput, in the order of Policies.
	Syncs []autoscale.SyncInput
	// Owned are the pods each policy sizes (or, in mode Off, recommends
	// for), by name, in the order of Policies.
	Owned [][]string
}

// Policy is a TailorPolicy of a SyncCase.
type Policy struct {
	ownership.Claimant
	Spec       *v1alpha1.TailorPolicySpec
	Generation int64
}

// source is where pods come from: a controller's owner reference (none for
// a bare pod), the template it creates them from, and their labels.
type source struct {
	owner    *metav1.OwnerReference
	template *corev1.PodTemplateSpec
	labels   map[string]string
	name     string
}

// The workloads a SyncCase draws from.
var (
	webDeployment    = ownership.Workload{Group: "apps", Kind: "Deployment", Name: "web"}
	canaryDeployment = ownership.Workload{Group: "apps", Kind: "Deployment", Name: "web-canary"}
	ghostDeployment  = ownership.Workload{Group: "apps", Kind: "Deployment", Name: "ghost"}
	dbStatefulSet    = ownership.Workload{Group: "apps", Kind: "StatefulSet", Name: "db"}
	agentDaemonSet   = ownership.Workload{Group: "apps", Kind: "DaemonSet", Name: "agent"}
)

// Sync draws a SyncCase from seed; the same seed gives the same case.
//
// The namespace always has Deployment web (a ReplicaSet of its template,
// and during a rollout now and then an older one of another template), and
// any of: Deployment web-canary (whose pods' labels match web's selector),
// StatefulSet db, DaemonSet agent (a pod per node), a ReplicaSet whose
// Deployment is gone and a bare pod (both labelled like web's pods), and
// Deployment ghost, scaled to zero. Pods are created from their template,
// with the LimitRanges' defaults where they were created after them, and
// some were resized in place since (each request and limit at the
// template's ratio). Some pods of the templates wait for a node, some
// unschedulable, some of them sized above their template by an earlier
// admission entry.
//
// One to three policies each name a workload (targetRef) or select pods by
// label, in any updateMode, with or without applyOnCreate and a startup
// boost, created at the same time or an hour apart; each sync's pods are
// those its policy claims and wins (ownership.ClaimedBy, as the
// controller's ownPods). HPAs scale workloads on Utilization and other
// metrics, and their holds are found through the pods' chains
// (ownership.HPAHolds); a VPA may act on a workload. Nodes hold their pods
// with some room or none, and now and then a spare node (maybe cordoned,
// not Ready or tainted) is where a recreation could go.
func Sync(seed uint64) SyncCase {
	r := rand.New(rand.NewPCG(seed, 4))
	g := gen{r: r}
	c := SyncCase{Chains: map[types.UID]ownership.Chain{}, Templates: map[ownership.Workload]*corev1.PodTemplateSpec{},
		PodTemplates: map[types.UID]*corev1.PodTemplateSpec{}}

	// The namespace's rules: the controller always has some (maybe none
	// of either kind).
	c.Rules = &nsrules.Rules{}
	if r.IntN(3) != 0 {
		ng := nsrulestest.Gen{R: r}
		c.Rules = &nsrules.Rules{LimitRanges: ng.LimitRanges(), Quotas: ng.Quotas()}
		nearlyFull(r, ng, c.Rules.Quotas)
	}

	// Workloads and the ReplicaSets that own pods.
	hash := fmt.Sprintf("%x", r.Uint32()&0xfffff)
	webTemplate := g.template()
	c.Templates[webDeployment] = webTemplate
	replicaSets := map[string][]metav1.OwnerReference{}
	var sources []source
	rsName := "web-" + hash
	replicaSets[rsName] = []metav1.OwnerReference{controllerRef("apps/v1", webDeployment)}
	c.Templates[ownership.Workload{Group: "apps", Kind: "ReplicaSet", Name: rsName}] = webTemplate
	sources = append(sources, source{owner: ptr(controllerRef("apps/v1", ownership.Workload{Group: "apps", Kind: "ReplicaSet", Name: rsName})),
		template: webTemplate, labels: map[string]string{"app": "web", "pod-template-hash": hash}, name: rsName})
	if g.chance(0.3) {
		// A rollout: the older ReplicaSet's pods have another template.
		old := "web-old"
		replicaSets[old] = []metav1.OwnerReference{controllerRef("apps/v1", webDeployment)}
		sources = append(sources, source{owner: ptr(controllerRef("apps/v1", ownership.Workload{Group: "apps", Kind: "ReplicaSet", Name: old})),
			template: g.template(), labels: map[string]string{"app": "web", "pod-template-hash": "old"}, name: old})
	}
	if g.chance(0.35) {
		t := g.template()
		c.Templates[canaryDeployment] = t
		rs := "web-canary-" + hash
		replicaSets[rs] = []metav1.OwnerReference{controllerRef("apps/v1", canaryDeployment)}
		sources = append(sources, source{owner: ptr(controllerRef("apps/v1", ownership.Workload{Group: "apps", Kind: "ReplicaSet", Name: rs})),
			template: t, labels: map[string]string{"app": "web", "track": "canary", "pod-template-hash": hash}, name: rs})
	}
	if g.chance(0.35) {
		t := g.template()
		c.Templates[dbStatefulSet] = t
		sources = append(sources, source{owner: ptr(controllerRef("apps/v1", dbStatefulSet)), template: t, labels: map[string]string{"app": "db", "tier": "backend"}, name: "db"})
	}
	agent := -1
	if g.chance(0.3) {
		t := g.template()
		c.Templates[agentDaemonSet] = t
		agent = len(sources)
		sources = append(sources, source{owner: ptr(controllerRef("apps/v1", agentDaemonSet)), template: t, labels: map[string]string{"app": "agent", "tier": "backend"}, name: "agent"})
	}
	if g.chance(0.2) {
		// Its Deployment was deleted, orphaning it; or it is not in the
		// controller's cache yet: either way the chain ends at it.
		if g.chance(0.5) {
			replicaSets["orphan"] = nil
		}
		sources = append(sources, source{owner: ptr(controllerRef("apps/v1", ownership.Workload{Group: "apps", Kind: "ReplicaSet", Name: "orphan"})),
			template: g.template(), labels: map[string]string{"app": "web"}, name: "orphan"})
	}
	if g.chance(0.2) {
		sources = append(sources, source{template: g.template(), labels: map[string]string{"app": "web"}, name: "bare"})
	}
	if g.chance(0.2) {
		c.Templates[ghostDeployment] = g.template()
	}

	// Nodes, and the pods bound to them.
	nodes := 1 + r.IntN(3)
	bound := make([][]*corev1.Pod, nodes)
	for i, s := range sources {
		n := 1 + r.IntN(3)
		if i == agent {
			n = nodes
		}
		for j := range n {
			p := g.created(c.Rules, s, fmt.Sprintf("%s-%d", s.name, j))
			node := r.IntN(nodes)
			if i == agent {
				node = j
			}
			p.Spec.NodeName = nodeName(node)
			bound[node] = append(bound[node], p)
			c.Pods = append(c.Pods, p)
			if s.owner != nil {
				c.PodTemplates[p.UID] = s.template
			}
		}
	}
	// Pods waiting for a node: of the workloads that create pods.
	for i, s := range sources {
		if s.owner == nil || i == agent || !g.chance(0.3) {
			continue
		}
		for j := range 1 + r.IntN(2) {
			p := g.waiting(c.Rules, s, fmt.Sprintf("%s-w%d", s.name, j))
			c.Pods = append(c.Pods, p)
			c.PodTemplates[p.UID] = s.template
		}
	}
	for i := range nodes {
		// Other namespaces' pods share the nodes.
		for j := range r.IntN(3) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%d-%d", i, j), Namespace: "other", UID: types.UID(fmt.Sprintf("other-%d-%d", i, j))},
				Spec: corev1.PodSpec{NodeName: nodeName(i), Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: g.pick(cpuSizes), corev1.ResourceMemory: g.pick(memSizes)}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			bound[i] = append(bound[i], p)
		}
		// The node holds its pods (the scheduler put them there) and some
		// room, or none.
		alloc := corev1.ResourceList{corev1.ResourceCPU: resource.Quantity{Format: resource.DecimalSI}, corev1.ResourceMemory: resource.Quantity{Format: resource.BinarySI}}
		if !g.chance(0.4) {
			alloc[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(r.IntN(4000)), resource.DecimalSI)
			alloc[corev1.ResourceMemory] = *resource.NewQuantity(int64(r.IntN(8<<10))<<20, resource.BinarySI)
		}
		for _, p := range bound[i] {
			for res, q := range resize.NodeRequests(p) {
				if a, ok := alloc[res]; ok {
					a.Add(q)
					alloc[res] = a
				}
			}
		}
		c.Nodes = append(c.Nodes, placement.NodePods{Node: ReadyNode(nodeName(i), alloc), Pods: bound[i]})
	}
	if g.chance(0.5) {
		spare := ReadyNode("spare", corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(1000+r.IntN(15000)), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(1<<10+r.IntN(31<<10))<<20, resource.BinarySI),
		})
		switch r.IntN(8) {
		case 0:
			spare.Spec.Unschedulable = true
		case 1:
			spare.Status.Conditions[0].Status = corev1.ConditionFalse
		case 2:
			spare.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		}
		c.Nodes = append(c.Nodes, placement.NodePods{Node: spare})
	}

	for _, p := range c.Pods {
		c.Chains[p.UID] = ownership.ControllerChain(p.OwnerReferences, func(name string) ([]metav1.OwnerReference, bool) {
			refs, ok := replicaSets[name]
			return refs, ok
		})
	}
	c.HPAs = g.hpas(hash)
	if g.chance(0.15) {
		modes := []string{"Off", "Auto", "", "Initial"}
		targets := []ownership.Workload{webDeployment, canaryDeployment, dbStatefulSet}
		c.VPAs = []ownership.VPA{{Name: "vpa", Target: targets[r.IntN(len(targets))], Mode: modes[r.IntN(len(modes))]}}
	}

	c.Policies = g.policies(hash)
	claimants := make([]ownership.Claimant, len(c.Policies))
	for i, p := range c.Policies {
		claimants[i] = p.Claimant
	}
	usage := map[types.UID]fleet.PodInput{}
	for _, p := range c.Pods {
		if p.Spec.NodeName != "" {
			usage[p.UID] = g.usage(p)
		}
	}
	for _, p := range c.Policies {
		in, owned := g.syncInput(&c, p, claimants, usage)
		c.Syncs = append(c.Syncs, in)
		c.Owned = append(c.Owned, owned)
	}
	drawRoom(seed, &c)
	return c
}

func nodeName(i int) string { return fmt.Sprintf("n%d", i+1) }

func controllerRef(apiVersion string, w ownership.Workload) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: w.Kind, Name: w.Name, UID: types.UID(w.Kind + "-" + w.Name), Controller: ptr(true)}
}

// template draws a workload's pod template: a pod of any shape gen.pod
// draws, unbound, as the controller reads it (its containers' resources,
// resize and restart policies).
func (g gen) template() *corev1.PodTemplateSpec {
	t := templateOf(g.pod(0))
	t.Labels = nil
	return t
}

// created is a pod s's controller created from its template: as the
// LimitRanger admitted it where it was created after the LimitRanges (a pod
// the LimitRanger would refuse now was created before them, and keeps what
// it has), and now and then resized in place since, each request and limit
// by one factor (the ratio between them, and so the QoS class, kept).
func (g gen) created(rules *nsrules.Rules, s source, name string) *corev1.Pod {
	p := g.admitted(rules, s, name)
	if p.Spec.Resources == nil && g.chance(0.4) {
		for _, c := range podcontainers.Names(p) {
			f := [][2]int64{{1, 2}, {4, 5}, {5, 4}, {2, 1}}[g.r.IntN(4)]
			g.scale(containerOf(p, c), f[0], f[1])
		}
	}
	// Started some time ago and Ready, or starting (a startup boost's
	// time); a few were admitted boosted.
	started := now.Add(-time.Duration(10+g.r.IntN(3600)) * time.Second)
	starting := g.chance(0.25)
	if starting {
		started = now.Add(-time.Duration(5+g.r.IntN(300)) * time.Second)
	}
	p.Status.StartTime = &metav1.Time{Time: started}
	if !starting {
		ready := started.Add(time.Duration(g.r.IntN(20)) * time.Second)
		if ready.After(now) {
			ready = now
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ready)}}
	}
	if c := podcontainers.Named(p, "c0"); c != nil && g.chance(0.15) {
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			p.Annotations = map[string]string{v1alpha1.BoostAnnotation: "c0=" + q.String()}
		}
	}
	return p
}

// admitted is a new pod of s, as the LimitRanger admitted it where it was
// created after the LimitRanges (a pod the LimitRanger would refuse now was
// created before them, and keeps what its template says).
func (g gen) admitted(rules *nsrules.Rules, s source, name string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, UID: types.UID("uid-" + name), Labels: maps.Clone(s.labels)},
		Spec: *s.template.Spec.DeepCopy(), Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if s.owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*s.owner}
	}
	if p.Spec.Resources == nil && g.r.IntN(4) != 0 {
		lr := nsrules.Rules{LimitRanges: rules.LimitRanges}
		if admitted := lr.Admitted(p); len(lr.Violations(admitted, nil)) == 0 {
			p = admitted
		}
	}
	return p
}

// scale multiplies c's requests and limits by num/den, each resource's
// request and limit alike.
func (g gen) scale(c *corev1.Container, num, den int64) {
	for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		if q, ok := l[corev1.ResourceCPU]; ok {
			l[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(q.MilliValue()*num/den, 1), resource.DecimalSI)
		}
		if q, ok := l[corev1.ResourceMemory]; ok {
			l[corev1.ResourceMemory] = *resource.NewQuantity(max(q.Value()*num/den, 1<<20), resource.BinarySI)
		}
	}
}

// waiting is a pod of s not yet bound to a node: created from the template
// as admitted says, or by an earlier admission entry twice its template's
// size; unschedulable for a while, or just created.
func (g gen) waiting(rules *nsrules.Rules, s source, name string) *corev1.Pod {
	p := g.admitted(rules, s, name)
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	if p.Spec.Resources == nil && g.chance(0.6) {
		for _, c := range podcontainers.Names(p) {
			g.scale(containerOf(p, c), 2, 1)
		}
		// Sized by tailor's admission, which marks what it sizes; now and
		// then the mark is missing: a pod its own, older template made
		// that large (a rollout's old ReplicaSet), which is not tailor's.
		if g.chance(0.9) {
			metav1.SetMetaDataAnnotation(&p.ObjectMeta, v1alpha1.AdmittedAnnotation, "policy: sized")
		}
	}
	if g.chance(0.7) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Duration(g.r.IntN(120)) * time.Second))}}
	}
	return p
}

// hpas draws up to two HorizontalPodAutoscalers, each scaling a workload
// (one of the namespace's, its current ReplicaSet, or one that has no pod)
// on utilization of a resource or a container's, or on metrics that read no
// request.
func (g gen) hpas(hash string) []autoscalingv2.HorizontalPodAutoscaler {
	var out []autoscalingv2.HorizontalPodAutoscaler
	targets := []autoscalingv2.CrossVersionObjectReference{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		{APIVersion: "apps/v1beta2", Kind: "Deployment", Name: "web"},
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-" + hash},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web-canary"},
		{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "ghost"},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"},
	}
	pct := ptr(int32(70))
	for i := range g.r.IntN(3) {
		h := autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hpa-%d", i), Namespace: Namespace},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: targets[g.r.IntN(len(targets))]}}
		for range 1 + g.r.IntN(2) {
			res := corev1.ResourceCPU
			if g.chance(0.3) {
				res = corev1.ResourceMemory
			}
			var m autoscalingv2.MetricSpec
			switch g.r.IntN(4) {
			case 0, 1:
				m = autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: res, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: pct}}}
			case 2:
				m = autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
					Name: res, Container: []string{"c0", "c1", "sidecar"}[g.r.IntN(3)],
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: pct}}}
			default:
				q := resource.MustParse("500m")
				m = autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: res, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}}
			}
			h.Spec.Metrics = append(h.Spec.Metrics, m)
		}
		out = append(out, h)
	}
	return out
}

// policies draws one to three policies with distinct names, created at
// the same time or an hour apart.
func (g gen) policies(hash string) []Policy {
	names := []string{"alpha", "beta", "gamma"}
	g.r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	targets := []*v1alpha1.TargetRef{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		{APIVersion: "apps/v1beta2", Kind: "Deployment", Name: "web"},
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-" + hash},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web-canary"},
		{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"},
		{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent"},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "ghost"},
	}
	selectors := []*metav1.LabelSelector{
		{MatchLabels: map[string]string{"app": "web"}},
		{MatchLabels: map[string]string{"tier": "backend"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "db"}}}},
	}
	var out []Policy
	for i := range 1 + g.r.IntN(3) {
		spec := g.spec()
		spec.Selector = nil
		if g.chance(0.7) {
			spec.TargetRef = targets[g.r.IntN(len(targets))].DeepCopy()
		} else {
			spec.Selector = selectors[g.r.IntN(len(selectors))].DeepCopy()
		}
		up := &v1alpha1.UpdatePolicy{}
		switch g.r.IntN(8) {
		case 0:
			up.UpdateMode = v1alpha1.UpdateModeOff
		case 1, 2:
			up.UpdateMode = v1alpha1.UpdateModeInPlace
		case 3, 4, 5, 6:
			up.UpdateMode = v1alpha1.UpdateModeInPlaceOrRecreate
		}
		if g.chance(0.2) {
			up.ApplyOnCreate = ptr(false)
		}
		if g.chance(0.5) {
			up.RecreateAfter = &metav1.Duration{Duration: []time.Duration{0, time.Minute, 5 * time.Minute, 10 * time.Minute}[g.r.IntN(4)]}
		}
		if *up != (v1alpha1.UpdatePolicy{}) || g.chance(0.5) {
			spec.UpdatePolicy = up
		}
		if g.chance(0.3) {
			if g.chance(0.5) {
				spec.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr(int32(110 + g.r.IntN(300)))}
			} else {
				spec.StartupBoost = &v1alpha1.StartupBoost{CPU: ptr(g.pick(cpuSizes[4:]))}
			}
		}
		if err := spec.Validate(); err != nil {
			panic(err)
		}
		p := Policy{Spec: spec, Generation: int64(1 + g.r.IntN(3))}
		p.Name = names[i]
		p.Created = now.Add(-time.Duration(1+g.r.IntN(2)) * time.Hour)
		p.RecommendOnly = spec.Mode() == v1alpha1.UpdateModeOff
		if ref := spec.TargetRef; ref != nil {
			w := ownership.WorkloadOf(ref.APIVersion, ref.Kind, ref.Name)
			p.Target = &w
		} else {
			sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
			if err != nil {
				panic(err)
			}
			p.Selector = sel
		}
		out = append(out, p)
	}
	return out
}

// syncInput is what the controller gathers for policy p (Reconcile:
// gather, advise, candidateNodes, recreationState), and the names of the
// pods it sizes. The pods it claims are split as ownPods splits them: a pod
// a VerticalPodAutoscaler acts on is held, one another policy wins is left
// to it (but a policy in mode Off recommends for every pod it claims).
func (g gen) syncInput(c *SyncCase, p Policy, claimants []ownership.Claimant, usage map[types.UID]fleet.PodInput) (autoscale.SyncInput, []string) {
	spec := p.Spec
	// As ownPods lists them: the policy itself first, then the others.
	order := []ownership.Claimant{p.Claimant}
	for _, o := range claimants {
		if o.Name != p.Name {
			order = append(order, o)
		}
	}
	claimants = order
	var conflict, vpa string
	if p.Target != nil {
		if v, ok := ownership.VPAOn(ownership.Chain{*p.Target}, c.VPAs); ok {
			vpa = v.String()
		}
		if w, ok := ownership.ClaimedBy(nil, ownership.Chain{*p.Target}, claimants); ok && !p.RecommendOnly && w.Name != p.Name {
			conflict = "TailorPolicy " + w.Name + " names the same workload"
		}
	}
	var running, unbound []*corev1.Pod
	var chains []ownership.Chain
	var owned []string
	for _, pod := range c.Pods {
		chain, set := c.Chains[pod.UID], labels.Set(pod.Labels)
		if !p.Claims(set, chain) {
			continue
		}
		if v, ok := ownership.VPAOn(chain, c.VPAs); ok {
			if vpa == "" {
				vpa = v.String()
			}
			continue
		}
		if w, _ := ownership.ClaimedBy(set, chain, claimants); !p.RecommendOnly && w.Name != p.Name {
			conflict = "TailorPolicy " + w.Name + " sizes pods this policy selects"
			continue
		}
		if pod.Spec.NodeName == "" {
			unbound = append(unbound, pod)
			continue
		}
		running = append(running, pod)
		chains = append(chains, chain)
		owned = append(owned, pod.Name)
	}
	var template *corev1.PodTemplateSpec
	var target []ownership.Workload
	if p.Target != nil {
		template = c.Templates[*p.Target]
		target = append(target, *p.Target)
	}
	holds, _ := ownership.HPAHolds(ownership.Workloads(chains, target...), c.HPAs)
	mode := spec.Mode()

	in := autoscale.SyncInput{
		PolicyInput: fleet.PolicyInput{Spec: spec, Server: server, MemoryFloorHeadroom: 0.1, Now: now, Holds: holds, Rules: c.Rules},
		Unbound:     unbound, Template: template, Settle: SyncSettle,
		BoostRaise: map[types.UID]map[string]bool{}, StuckSeen: map[types.UID]time.Time{},
	}
	for _, pod := range running {
		pin := boosted{PodInput: usage[pod.UID]}
		pin.Targets = copyTargets(pin.Targets)
		if g.chance(0.5) {
			pin.RaiseSince = now.Add(-time.Duration(g.r.IntN(600)) * time.Second)
		}
		g.boost(&pin, spec, holds, template)
		if len(pin.BoostRaiseOf) > 0 {
			in.BoostRaise[pod.UID] = pin.BoostRaiseOf
		}
		in.Pods = append(in.Pods, pin.PodInput)
	}
	if mode != v1alpha1.UpdateModeOff {
		// candidateNodes: the nodes of the pods the advice would change,
		// each with every pod bound to it.
		for _, pin := range in.Pods {
			if len(pin.Targets) > 0 || pin.PodTarget.CPU != nil || pin.PodTarget.Memory != nil {
				addNode(&in, c, pin.Pod.Spec.NodeName)
			}
		}
	}
	// newPodRoom.
	if p.Target != nil && template != nil && mode != v1alpha1.UpdateModeOff && newpods.ApplyOnCreate(spec) {
		rin := placement.NewPodRoomInput{Template: template, DaemonSet: p.Target.Kind == "DaemonSet"}
		stuck, _ := placement.DecideStuck(placement.StuckInput{Pods: unbound, Template: template, Now: now.Add(placement.UnschedulableAfter)})
		rin.Free = len(stuck) > 0
		for _, np := range c.Nodes {
			if !rin.Free && !rin.DaemonSet {
				np.Pods = nil
			}
			rin.Nodes = append(rin.Nodes, np)
		}
		if rin.DaemonSet {
			name := p.Target.Name
			rin.Own = func(o *corev1.Pod) bool {
				owner := metav1.GetControllerOf(o)
				return o.Namespace == Namespace && owner != nil && owner.Kind == "DaemonSet" && owner.Name == name
			}
		}
		in.NewPodRoom = placement.NewPodRoom(rin)
	}
	// The recommendation new pods are planned from: the workload's, as a
	// pod of it has it, or drawn for the template; none yet now and then.
	var rec *v1alpha1.Recommendation
	if template != nil && !g.chance(0.15) {
		rec = &v1alpha1.Recommendation{}
		for _, name := range podcontainers.Names(&corev1.Pod{Spec: template.Spec}) {
			var t podchange.Target
			if len(running) > 0 {
				t = usage[running[0].UID].Targets[name]
			} else {
				t = g.usage(&corev1.Pod{Spec: template.Spec}).Targets[name]
			}
			cr := v1alpha1.RecommendedContainerResources{ContainerName: name, Target: corev1.ResourceList{}}
			if t.CPU != nil {
				cr.Target[corev1.ResourceCPU] = *t.CPU
			}
			if t.Memory != nil {
				cr.Target[corev1.ResourceMemory] = *t.Memory
			}
			rec.ContainerRecommendations = append(rec.ContainerRecommendations, cr)
		}
	}
	in.NewPods = newpods.EntryInput{Spec: spec, Generation: p.Generation, Template: template, Recommendation: rec,
		HeldByVPA: vpa, Conflict: conflict, Holds: holds, Room: in.NewPodRoom, Rules: c.Rules, Replicas: len(running), Server: server, Now: now}
	// status.admission as the last sync left it: what this one would plan,
	// one planned before the nodes filled (without their room), or none.
	switch g.r.IntN(3) {
	case 0:
		in.Entry = newpods.PlanEntry(in.NewPods)
	case 1:
		before := in.NewPods
		before.Room = nil
		if g.chance(0.3) {
			// Planned before the policy was last edited.
			before.Generation--
		}
		in.Entry = newpods.PlanEntry(before)
	}
	for _, pod := range unbound {
		if g.chance(0.5) {
			in.StuckSeen[pod.UID] = now.Add(-time.Duration(g.r.IntN(3)) * time.Second)
		}
	}
	// recreationState.
	after := 5 * time.Minute
	if u := spec.UpdatePolicy; u != nil && u.RecreateAfter != nil {
		after = u.RecreateAfter.Duration
	}
	in.Recreation = autoscale.RecreationState{RecreateAfter: after, Generation: p.Generation,
		ShortSince: map[types.UID]time.Time{}, Blocked: map[types.UID]autoscale.EvictionBlock{}, Entries: map[types.UID]v1alpha1.Recreation{}}
	if template != nil {
		admitted := c.Rules.Admitted(&corev1.Pod{ObjectMeta: template.ObjectMeta, Spec: template.Spec})
		in.Recreation.Template = &corev1.PodTemplateSpec{ObjectMeta: admitted.ObjectMeta, Spec: admitted.Spec}
	}
	if g.chance(0.3) {
		in.Recreation.LastEviction = now.Add(-time.Duration(g.r.IntN(180)) * time.Second)
	}
	for _, pod := range running {
		var since time.Time
		if g.chance(0.85) {
			since = now.Add(-time.Duration(g.r.IntN(3600)) * time.Second)
		}
		in.Recreation.ShortSince[pod.UID] = since
		if g.chance(0.1) {
			in.Recreation.Blocked[pod.UID] = autoscale.EvictionBlock{Until: now.Add(time.Duration(g.r.IntN(120)-60) * time.Second),
				Reason: "TooManyRequests", Message: "the PodDisruptionBudget allows no disruption"}
		}
	}
	return in, owned
}

// boosted is a pod's input with the startup boost's advice.
type boosted struct {
	fleet.PodInput
	BoostRaiseOf map[string]bool
}

// boost applies the startup boost's advice to a pod's targets, as the
// controller's advise does (boost.Targets from the pod, its base
// the recommendation or the template's request).
func (g gen) boost(pin *boosted, spec *v1alpha1.TailorPolicySpec, holds ownership.Holds, template *corev1.PodTemplateSpec) {
	if spec.StartupBoost == nil {
		return
	}
	targets := pin.Targets
	d := boost.Targets(boost.Input{Pod: pin.Pod, Spec: spec, Holds: holds, FieldManager: "tailor", Now: now,
		Base: func(name string) (resource.Quantity, bool) {
			if t, ok := targets[name]; ok && t.CPU != nil {
				return *t.CPU, true
			}
			if template != nil {
				if c := podcontainers.Named(&corev1.Pod{Spec: template.Spec}, name); c != nil {
					q, ok := c.Resources.Requests[corev1.ResourceCPU]
					return q, ok
				}
			}
			return resource.Quantity{}, false
		}})
	pin.Boost, pin.BoostRaiseOf = map[string]bool{}, map[string]bool{}
	for name, bt := range d.Containers {
		t := targets[name]
		t.CPU = bt.CPU
		if bt.CPU != nil {
			pin.Boost[name] = true
		}
		if bt.Raise {
			pin.BoostRaiseOf[name] = true
		}
		if t.CPU == nil && t.Memory == nil {
			delete(targets, name)
		} else {
			targets[name] = t
		}
	}
}

func copyTargets(in map[string]podchange.Target) map[string]podchange.Target {
	out := make(map[string]podchange.Target, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
