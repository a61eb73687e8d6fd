//go:build controller

package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/agent/report"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/metrics"
	agentsource "github.com/tailorhq/tailor/internal/metrics/agent"
	kubeletsource "github.com/tailorhq/tailor/internal/metrics/kubelet"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/tenantquery"
	"github.com/tailorhq/tailor/test/builder"
)

// Issue #34's red team: a user who is admin of one namespace and of
// nothing else tries, through the real apiserver and against the real
// controller, each way it could make tailor act for it outside that
// namespace: query guardrails and metrics queries that read another
// namespace's series, tailor's marks written on pods by hand, a node
// agent's report about another node's pod, and a kubelet page past the
// size cap. Each is refused, or confined to the tenant's namespace (the
// page: to its node), and each subtest logs what was tried and what
// tailor did.
//
// The victim's namespace has a twin, control, with the same workload and
// policy, which the tenant does not name: whatever tailor does on its own
// it does to both, so anything the tenant made it do to the victim shows
// as a difference between them.
func TestTenantRedTeam(t *testing.T) {
	t.Run("guardrails reading another namespace", redTeamGuardrails)
	t.Run("metrics queries reading another namespace", redTeamMetricsQueries)
	t.Run("annotations set by hand", redTeamMarks)
	t.Run("a forged agent report for another node's pod", redTeamAgentReport)
	t.Run("an oversized kubelet page", redTeamKubeletPage)
}

// redTeam is the tenant's world: its namespace, the victim's and the
// control's, each with a node of its own, served by one controller, one
// clock and one metrics source, as one manager serves a cluster.
type redTeam struct {
	tenant, victim, control *env
	// user is the tenant; as acts as it.
	user string
	as   client.Client
	// beforeSync, when set, runs at each sync once the clock has moved
	// and before the controller syncs: what a node sends each period.
	beforeSync func()
}

// newRedTeam makes the world with a controller of opts; the tenant's env
// writes as the tenant.
func newRedTeam(t *testing.T, opts controllerOptions) *redTeam {
	t.Helper()
	tenant := newEnv(t, opts)
	w := &redTeam{tenant: tenant, victim: tenant.neighbour("victim"), control: tenant.neighbour("control")}
	w.user, w.as = tenantUser(t, tenant.ns)
	tenant.writer = w.as
	if err := w.as.List(tenant.ctx, &corev1.PodList{}, client.InNamespace(w.victim.ns)); !apierrors.IsForbidden(err) {
		t.Fatalf("%s listed the victim's pods: %v, want Forbidden", w.user, err)
	}
	return w
}

func (w *redTeam) envs() []*env { return []*env{w.tenant, w.victim, w.control} }

// use makes the world's controller read usage from src.
func (w *redTeam) use(src metrics.Source) {
	e := w.tenant
	c := newController(e.t, deps{clock: e.clock, source: src, events: e.events}, e.opts)
	for _, x := range w.envs() {
		x.ctrl = c
	}
}

// sync runs n sync periods of the world: the clock moves on, the
// controller syncs policy web of each namespace, and the kubelet answers.
func (w *redTeam) sync(n int) {
	w.tenant.t.Helper()
	for range n {
		w.tenant.clock.Step(syncPeriod)
		if w.beforeSync != nil {
			w.beforeSync()
		}
		for _, x := range w.envs() {
			x.reconcile("web")
			x.kubelet.Sync(x.t, x.ns)
		}
	}
}

// editPolicy changes the tenant's policy web, as the tenant.
func (w *redTeam) editPolicy(mutate func(*v1alpha1.TailorPolicySpec)) {
	e := w.tenant
	e.t.Helper()
	p := &v1alpha1.TailorPolicy{}
	if err := w.as.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "web"}, p); err != nil {
		e.t.Fatalf("%s reading its policy: %v", w.user, err)
	}
	mutate(&p.Spec)
	if err := w.as.Update(e.ctx, p); err != nil {
		e.t.Fatalf("%s editing its policy: %v", w.user, err)
	}
}

// mark writes annotations on pod name of e's namespace by hand, as the
// tenant.
func (w *redTeam) mark(e *env, name string, annotations map[string]string) error {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Annotations: annotations}}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	return w.as.Patch(e.ctx, p, client.RawPatch("application/merge-patch+json", body))
}

// neighbour is another namespace beside e's, prefix-<random>, with a node
// of its own, written by the tests' admin: the same clock, metrics source,
// events, kubelet and controller, as one manager serves every namespace.
func (e *env) neighbour(prefix string) *env {
	e.t.Helper()
	n := *e
	n.ns = prefix + "-" + rand.String(5)
	createNamespaces(e.ctx, e.t, n.ns)
	n.node = n.addNode("node-"+n.ns, "8", "32Gi")
	n.writer = apiClient
	return &n
}

// tenantUser makes user red-<random> admin of namespace ns and of nothing
// else, and returns it with a client acting as it, once the apiserver's
// authorizer lets it work there. A RoleBinding gives it the built-in admin
// ClusterRole there, as a cluster gives a team its namespace, and another
// a Role over TailorPolicies there: admin aggregates no custom resources,
// so a cluster whose tenants use tailor grants them its policies so.
func tenantUser(t *testing.T, ns string) (string, client.Client) {
	t.Helper()
	ctx := context.Background()
	aggregateAdmin(ctx, t)
	user := "red-" + rand.String(5)
	bind := func(kind, role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	}
	objs := []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tailor-user"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"tailorpolicies"}, Verbs: []string{rbacv1.VerbAll}}}},
		bind("ClusterRole", "admin"), bind("Role", "tailor-user"),
	}
	for _, o := range objs {
		if err := apiClient.Create(ctx, o); err != nil {
			t.Fatalf("granting %s namespace %s: %v", user, ns, err)
		}
	}
	as := impersonating(t, user, []string{"system:authenticated"})
	// RBAC reaches the authorizer through its informers.
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return as.List(ctx, &corev1.PodList{}, client.InNamespace(ns)) == nil &&
			as.List(ctx, &v1alpha1.TailorPolicyList{}, client.InNamespace(ns)) == nil, nil
	})
	if err != nil {
		t.Fatalf("%s may not list pods and policies of namespace %s 2m after its bindings", user, ns)
	}
	return user, as
}

// aggregateAdmin gives the built-in admin ClusterRole the rules a cluster
// gives it. The apiserver makes admin with an aggregation rule and no
// rules of its own; kube-controller-manager's clusterrole-aggregation
// controller fills them in from the ClusterRoles it selects (edit, and
// through edit view, and their system:aggregate-to-* roles). envtest runs
// no controller-manager, so this does what that controller does.
func aggregateAdmin(ctx context.Context, t *testing.T) {
	t.Helper()
	var roles rbacv1.ClusterRoleList
	if err := apiClient.List(ctx, &roles); err != nil {
		t.Fatal(err)
	}
	var rulesOf func(r *rbacv1.ClusterRole, seen map[string]bool) []rbacv1.PolicyRule
	rulesOf = func(r *rbacv1.ClusterRole, seen map[string]bool) []rbacv1.PolicyRule {
		if r.AggregationRule == nil || seen[r.Name] {
			return r.Rules
		}
		seen[r.Name] = true
		var out []rbacv1.PolicyRule
		for _, sel := range r.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil {
				t.Fatal(err)
			}
			for i := range roles.Items {
				if o := &roles.Items[i]; o.Name != r.Name && s.Matches(labels.Set(o.Labels)) {
					out = append(out, rulesOf(o, seen)...)
				}
			}
		}
		return out
	}
	i := slices.IndexFunc(roles.Items, func(r rbacv1.ClusterRole) bool { return r.Name == "admin" })
	if i < 0 {
		t.Fatal("the apiserver has no admin ClusterRole")
	}
	admin := &roles.Items[i]
	if len(admin.Rules) > 0 {
		return
	}
	seen := map[string]bool{}
	for _, r := range rulesOf(admin, map[string]bool{}) {
		if key := fmt.Sprintf("%+v", r); !seen[key] {
			seen[key] = true
			admin.Rules = append(admin.Rules, r)
		}
	}
	if err := apiClient.Update(ctx, admin); err != nil {
		t.Fatalf("aggregating the admin ClusterRole: %v", err)
	}
	t.Logf("the admin ClusterRole had no rules (no aggregation controller runs here): aggregated %d", len(admin.Rules))
}

// outcome is what tailor made of e's namespace: each pod's resources and
// annotations, and policy web's status (its conditions' transition times
// aside), as text naming the namespace NS and its node NODE.
func (e *env) outcome() string {
	e.t.Helper()
	var pods corev1.PodList
	if err := apiClient.List(e.ctx, &pods, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	type pod struct {
		Resources   map[string]corev1.ResourceRequirements
		Annotations map[string]string
	}
	out := map[string]any{}
	for _, p := range pods.Items {
		po := pod{Resources: map[string]corev1.ResourceRequirements{}, Annotations: p.Annotations}
		for _, c := range p.Spec.Containers {
			po.Resources[c.Name] = c.Resources
		}
		out["pod "+p.Name] = po
	}
	st := e.getPolicy("web").Status
	// Stamped with the wall clock (meta.SetStatusCondition), not the
	// controller's: the twins' differ by when each sync ran.
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	out["policy web"] = st
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.NewReplacer(e.node, "NODE", e.ns, "NS").Replace(string(b))
}

// sameAsControl fails t where the victim's pods or policy differ from the
// control's.
func (w *redTeam) sameAsControl(t *testing.T) {
	t.Helper()
	if diff := cmp.Diff(w.control.outcome(), w.victim.outcome()); diff != "" {
		t.Errorf("the victim's pods and policy differ from its untouched twin's (-control +victim):\n%s", diff)
	}
}

// recommendation is policy web's recommendation for container app, as
// text.
func (e *env) recommendation() string {
	e.t.Helper()
	rec := e.getPolicy("web").Status.Recommendation
	if rec == nil || len(rec.ContainerRecommendations) == 0 {
		return "none"
	}
	tg := rec.ContainerRecommendations[0].Target
	return fmt.Sprintf("cpu %s memory %s", tg.Cpu(), tg.Memory())
}

// readyOf is policy web's Ready condition, or a zero one.
func (e *env) readyOf() metav1.Condition {
	e.t.Helper()
	if c := condition(e.getPolicy("web"), v1alpha1.ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// A canary's query guardrail is asked with the manager's Prometheus
// credentials, which read every namespace. The tenant's canary is watched
// by a query naming no namespace, which is asked confined to the tenant's;
// then the tenant rewrites it, mid-canary, to read the victim's series in
// each way it can think of. None is sent: Prometheus is never asked a
// query that reads outside the tenant's namespace.
func redTeamGuardrails(t *testing.T) {
	prom := newScriptedPrometheus(t)
	w := newRedTeam(t, controllerOptions{Prometheus: prom.URL})
	e, victim := w.tenant, w.victim
	prom.Set("web-0", 0.12)
	prom.Set("web-1|web-2", 0.12)
	idleDeployment(victim)
	unnamed := strings.Replace(latencyQuery, `namespace="{{.Namespace}}", `, "", 1)
	idleDeployment(e, latencyGuardrail, func(c *v1alpha1.Canary) { c.Guardrails.Queries[0].Query = unnamed })
	e.untilCanary()
	w.sync(1)
	asked := prom.Asked()
	if !slices.ContainsFunc(asked, func(q string) bool {
		return strings.Contains(q, `namespace="`+e.ns+`"`) && strings.Contains(q, `pod=~"web-0"`)
	}) {
		t.Fatalf("the canary's guardrail, naming no namespace, was asked %q; want it asked about web-0 in namespace %s", asked, e.ns)
	}
	t.Logf("guardrail %s, naming no namespace, asked as %s", unnamed, asked[0])

	// A template that renders a confined query when tailor checks it (for
	// a pod named "pod") and the victim's for the canary's pods: each
	// rendering is confined before it is sent, so the policy passes its
	// check and the canary is held without an answer.
	branch := `{{if eq .Pods "pod"}}max(http_errors{pod=~"{{.Pods}}"}){{else}}max(http_errors{namespace="` + victim.ns + `"}){{end}}`
	w.editPolicy(func(s *v1alpha1.TailorPolicySpec) { s.Behavior.ScaleDown.Canary.Guardrails.Queries[0].Query = branch })
	w.sync(2)
	c := e.webCondition(v1alpha1.ConditionCanary)
	if !strings.Contains(c.Message, "could read outside the policy's namespace") {
		t.Errorf("Canary condition %s %s: %q, want it to say the query rendered for the canary could read outside the namespace", c.Status, c.Reason, c.Message)
	}
	t.Logf("guardrail %s: Canary=%s %s: %s", branch, c.Status, c.Reason, c.Message)

	for _, query := range []string{
		`max(http_errors{namespace="` + victim.ns + `"})`,
		`max(http_errors{namespace=~"` + victim.ns + `|` + e.ns + `", pod=~"{{.Pods}}"})`,
		`max(http_errors{pod=~"{{.Pods}}"}) or max(http_errors{namespace!="` + e.ns + `"})`,
	} {
		w.editPolicy(func(s *v1alpha1.TailorPolicySpec) { s.Behavior.ScaleDown.Canary.Guardrails.Queries[0].Query = query })
		w.sync(2)
		r := e.readyOf()
		if r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonQueryOutsideNamespace {
			t.Errorf("guardrail %s: Ready %s %s: %q, want False %s", query, r.Status, r.Reason, r.Message, v1alpha1.ReasonQueryOutsideNamespace)
		}
		t.Logf("guardrail %s: Ready=%s %s", query, r.Status, r.Reason)
	}
	asked = prom.Asked()
	for _, q := range asked {
		if err := tenantquery.Check(q, e.ns); err != nil || strings.Contains(q, victim.ns) {
			t.Errorf("Prometheus was asked %s, which is not confined to the tenant's namespace %s (%v)", q, e.ns, err)
		}
	}
	t.Logf("Prometheus was asked %d distinct queries, each confined to namespace %s", len(asked), e.ns)
}

// A policy's metrics queries (spec.metrics.prometheus) are run with the
// manager's credentials too. The tenant's query naming the victim's
// namespace is refused before anything is sent; one naming none is sent
// confined to the tenant's.
func redTeamMetricsQueries(t *testing.T) {
	prom := newScriptedPrometheus(t)
	w := newRedTeam(t, controllerOptions{})
	e, victim := w.tenant, w.victim
	pc, err := prometheus.NewClient(prom.URL, nil, manager.SourceTimeout)
	if err != nil {
		t.Fatal(err)
	}
	src, err := prometheus.New(pc, prometheus.Options{Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	w.use(src)
	for _, x := range w.envs() {
		x.pod("web", webPod("web-0"))
	}
	victim.policy("web", nil)
	// The tenant's queries read a metric of their own, so that what
	// Prometheus was asked for the tenant tells from the victim's own
	// queries.
	const metric = "red_team_working_set_bytes"
	outside := `max by (namespace, pod, container) (` + metric + `{namespace="` + victim.ns + `"})`
	e.policy("web", func(s *v1alpha1.TailorPolicySpec) {
		s.Metrics = &v1alpha1.MetricsOverrides{Prometheus: &v1alpha1.PrometheusQueries{Memory: outside}}
	})
	w.sync(2)
	r := e.readyOf()
	if r.Status != metav1.ConditionFalse || r.Reason != v1alpha1.ReasonQueryOutsideNamespace {
		t.Errorf("memory query %s: Ready %s %s: %q, want False %s", outside, r.Status, r.Reason, r.Message, v1alpha1.ReasonQueryOutsideNamespace)
	}
	t.Logf("memory query %s: Ready=%s %s", outside, r.Status, r.Reason)

	unnamed := `max by (namespace, pod, container) (` + metric + `{pod=~"{{.Pods}}"})`
	w.editPolicy(func(s *v1alpha1.TailorPolicySpec) { s.Metrics.Prometheus.Memory = unnamed })
	w.sync(2)
	if r := e.readyOf(); r.Reason == v1alpha1.ReasonQueryOutsideNamespace {
		t.Errorf("memory query %s naming no namespace: Ready %s %s: %q", unnamed, r.Status, r.Reason, r.Message)
	}
	var mine []string
	for _, q := range prom.Asked() {
		if strings.Contains(q, metric) {
			mine = append(mine, q)
		}
	}
	want := metric + `{namespace="` + e.ns + `",pod=~"web-0"}`
	if !slices.ContainsFunc(mine, func(q string) bool { return strings.Contains(q, want) }) {
		t.Errorf("the tenant's queries asked: %q, want one reading %s", mine, want)
	}
	for _, q := range mine {
		if err := tenantquery.Check(q, e.ns); err != nil || strings.Contains(q, victim.ns) {
			t.Errorf("Prometheus was asked %s, which is not confined to the tenant's namespace %s (%v)", q, e.ns, err)
		}
	}
	t.Logf("memory query %s asked as %q", unnamed, mine)
}

// tailor reads two annotations on pods that whoever may edit a pod can
// write. The tenant writes them by hand, naming the victim's policy, on
// the victim's pods, which the apiserver refuses, and on pods of its own
// copy of the victim's workload (one that claims the victim's ReplicaSet
// as its owner among them), where tailor acts on them: a CPU request
// marked as a startup boost is given back at once, and a pod marked as
// sized by tailor that no node has room for is deleted. Neither reaches
// the victim.
func redTeamMarks(t *testing.T) {
	w := newRedTeam(t, controllerOptions{})
	e, victim := w.tenant, w.victim
	rss := map[*env]*appsv1.ReplicaSet{}
	for _, x := range w.envs() {
		rs := x.ownedDeployment("web", map[string]string{"app": "web"})
		rss[x] = rs
		for _, name := range []string{"web-0", "web-1"} {
			x.pod("web", podOf(rs, name))
			x.source.Set(x.ns, name, "app", 0.2, 150*mi)
		}
		// Starting: boosted in place by tailor, and given back.
		x.setReady("web-1", false, false)
		x.policy("web", both(targetRef("web"), func(s *v1alpha1.TailorPolicySpec) {
			s.StartupBoost = &v1alpha1.StartupBoost{FactorPercent: ptr.To[int32](300)}
		}))
	}
	w.sync(2)
	marks := map[string]string{
		v1alpha1.AdmittedAnnotation: victim.ns + "/web: app cpu 500m->4",
		v1alpha1.BoostAnnotation:    "app=2",
	}
	for _, name := range []string{"web-0", "web-1"} {
		if err := w.mark(victim, name, marks); !apierrors.IsForbidden(err) {
			t.Errorf("%s marking the victim's pod %s: %v, want Forbidden", w.user, name, err)
		}
	}
	if err := w.as.Create(e.ctx, webPod("web-2").Namespace(victim.ns).Obj()); !apierrors.IsForbidden(err) {
		t.Errorf("%s creating a pod in the victim's namespace: %v, want Forbidden", w.user, err)
	}

	// Its own pods, each marked or not: web-lent and web-plain at 2
	// cores, and web-stuck and web-waiting waiting for a node at 7, above
	// the 6 cores its policy admits new pods at (a 3x boost of the 2
	// cores web-plain keeps).
	rs := rss[e]
	for _, name := range []string{"web-lent", "web-plain"} {
		p := podOf(rs, name)
		p.Spec.Containers[0].Resources = builder.Requirements(builder.List("2", "256Mi"), builder.List("4", "512Mi"))
		e.pod("web", p)
		e.source.Set(e.ns, name, "app", 0.2, 150*mi)
	}
	e.pod("web", webPod("web-9").Label("app", "web").Owner("ReplicaSet", rs.Name, string(rss[victim].UID)))
	for _, name := range []string{"web-stuck", "web-waiting"} {
		e.pendingPod(rs, "web", name, "7", time.Minute, false)
	}
	for _, name := range []string{"web-0", "web-lent", "web-9", "web-stuck"} {
		if err := w.mark(e, name, marks); err != nil {
			t.Fatalf("%s marking its own pod %s: %v", w.user, name, err)
		}
	}
	t.Logf("%s wrote %v on its pods web-0, web-lent (cpu 2), web-9 (owned, it says, by the victim's ReplicaSet) and web-stuck (cpu 7, unschedulable)", w.user, marks)
	w.sync(12)

	cpu := e.cpuOf("web-lent", "web-plain")
	if cpu[0] == "2" || cpu[1] != "2" {
		t.Errorf("the tenant's web-lent, marked as boosted, and web-plain, not marked, both at 2 cores: cpu %v %s later, want web-lent's given back", cpu, 12*syncPeriod)
	}
	stuck := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "web-stuck"}, &corev1.Pod{})
	waiting := apiClient.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "web-waiting"}, &corev1.Pod{})
	if !apierrors.IsNotFound(stuck) || waiting != nil {
		t.Errorf("the tenant's web-stuck, marked as sized by tailor, and web-waiting, not marked, both at 7 cores and unschedulable: %v and %v, want only web-stuck replaced", stuck, waiting)
	}
	t.Logf("in the tenant's namespace, tailor gave web-lent's 'boost' back (cpu 2 -> %s; web-plain, unmarked, %s) and deleted web-stuck (%v; web-waiting, unmarked, kept)", cpu[0], cpu[1], stuck)
	t.Logf("the victim's pods' cpu %v, the control's %v", victim.cpuOf("web-0", "web-1"), w.control.cpuOf("web-0", "web-1"))
	w.sameAsControl(t)
}

// An agent speaks for the node its token is bound to. The tenant cannot
// mint the agents' token, and one of its own namespace's is refused; with
// the token of the agent on its node (as whoever breaks out of a pod onto
// the node holds it), its report of figures for the victim's pod on
// another node is taken for that node and used for none but that node's
// pods: the victim's recommendation does not move.
func redTeamAgentReport(t *testing.T) {
	w := newRedTeam(t, controllerOptions{})
	e, victim, control := w.tenant, w.victim, w.control
	// tailor's install: the agents' ServiceAccount and their pods.
	install := e.neighbour("tailor")
	agentUser, _ := serviceAccountUser(install.ns, "agent")
	receiver := agentsource.NewReceiver(&agentsource.Authenticator{
		Reviewer: clientset.AuthenticationV1().TokenReviews(), Username: agentUser, Clock: e.clock, TTL: time.Minute,
	}, e.clock, logr.Discard(), ctrlmetrics.Registry)
	// No agent on the victim's and control's nodes: their pods are read
	// through the fallback.
	w.use(&agentsource.Source{Receiver: receiver, Fallback: e.source, Clock: e.clock})
	for _, x := range w.envs() {
		x.pod("web", webPod("web-0"))
		x.policy("web", nil)
	}
	for _, x := range []*env{victim, control} {
		x.source.Set(x.ns, "web-0", "app", 0.1, 100*mi)
	}
	figures := func(p *corev1.Pod, cpu float64, ws uint64, risk bool) report.Container {
		_, id, _ := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
		c := report.Container{PodUID: string(p.UID), ID: id, Time: e.clock.Now(), Window: 5, CPU: cpu, WorkingSet: ws, MemoryLimit: 512 * mi}
		if risk {
			c.MemoryGrowth, c.Urgent, c.MemoryAtRisk = 50*mi, "memory: on course for the limit", true
		}
		return c
	}
	// Within the victim's limits (1 core, 512Mi), so that only where the
	// figure came from can keep it from the victim.
	forged := func() report.Report {
		return report.Report{Urgent: true, Containers: []report.Container{
			figures(e.getPod("web-0"), 0.6, 300*mi, false), figures(victim.getPod("web-0"), 0.95, 500*mi, true),
		}}
	}
	push := func(token string) int {
		body, err := json.Marshal(forged())
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequestWithContext(e.ctx, http.MethodPost, report.Path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		receiver.ServeHTTP(rec, req)
		return rec.Code
	}
	reports := func(result string) float64 {
		return metricValue(t, "tailor_agent_reports_total", map[string]string{"result": result})
	}
	t.Logf("forged report: the victim's web-0 (node %s) at 0.95 cores, 500Mi of its 512Mi limit growing 50Mi/s, at risk; the tenant's web-0 (node %s) at 0.6 cores, 300Mi", victim.node, e.node)

	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{report.Audience}}}
	err := w.as.SubResource("token").Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: install.ns, Name: "agent"}}, tr)
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s asking for a token of the agents' ServiceAccount: %v, want Forbidden", w.user, err)
	}
	own := e.agentToken("agent", e.node)
	refused := reports("forbidden")
	if code := push(own); code != http.StatusForbidden {
		t.Errorf("the report with a token of ServiceAccount %s/agent, bound to the tenant's pod on its node: HTTP %d, want 403", e.ns, code)
	}
	if got := reports("forbidden") - refused; got != 1 {
		t.Errorf("tailor_agent_reports_total{result=forbidden} grew by %v, want 1", got)
	}
	t.Logf("with a token of its own namespace's ServiceAccount: refused (403); a token of the agents': %v", err)

	w.sync(3)
	before := victim.recommendation()
	stolen := install.agentToken("agent-"+e.node, e.node)
	w.beforeSync = func() {
		if code := push(stolen); code != http.StatusNoContent {
			t.Errorf("the report with the token of the agent on node %s: HTTP %d, want 204 (taken for that node)", e.node, code)
		}
	}
	w.sync(9)
	after := victim.recommendation()
	t.Logf("with the token of the agent on node %s, 9 reports taken: victim's recommendation %s before, %s after (control %s); the tenant's own pod on that node: %s",
		e.node, before, after, control.recommendation(), e.recommendation())
	w.sameAsControl(t)
	rec := e.getPolicy("web").Status.Recommendation
	if rec == nil || len(rec.ContainerRecommendations) == 0 || rec.ContainerRecommendations[0].Target.Memory().Value() < 300*mi {
		t.Errorf("the tenant's web-0 recommendation %s: want its node's report (300Mi) read for it", e.recommendation())
	}
}

// A kubelet page over --kubelet-max-page-bytes is refused unread, and its
// node's pods are held. The tenant fills its node's page with containers
// of its own (one pod of 64 with the longest names there are, bound to the
// node by hand): its node's pods are held, TooLarge; the victim's node is
// still read.
func redTeamKubeletPage(t *testing.T) {
	const maxPage = 16 << 10
	w, kubelets := newKubeletRedTeam(t, maxPage)
	e, victim := w.tenant, w.victim
	// The tenant's second pod shares the victim's node.
	e.pod("web", webPod("web-1").Node(victim.node))
	e.source.Set(e.ns, "web-1", "app", 0.1, 100*mi)
	w.sync(3)
	if r := e.readyOf(); strings.Contains(r.Message, "held") {
		t.Fatalf("the tenant's pod held before its node's page grew: %s", r.Message)
	}
	small := kubelets.size(e.node)
	refused := metricValue(t, "tailor_kubelet_pages_refused_total", map[string]string{"page": "resource"})
	w.ballast()
	w.sync(3)
	grew := metricValue(t, "tailor_kubelet_pages_refused_total", map[string]string{"page": "resource"}) - refused
	r := e.readyOf()
	t.Logf("the tenant's node %s: page %d bytes, then %d with its ballast, cap %d: refused %v times; the tenant's policy: Ready=%s %s",
		e.node, small, kubelets.size(e.node), maxPage, grew, r.Status, r.Message)
	held := fmt.Sprintf("1 container(s) without usable figures (TooLarge 2), first %s/web-0/app", e.ns)
	if r.Status != metav1.ConditionTrue || !strings.Contains(r.Message, held) || !strings.Contains(r.Message, fmt.Sprintf("larger than %d bytes", maxPage)) {
		t.Errorf("the tenant's policy, one node's page over the cap: Ready %s %q, want True saying %q: its pod there held, its pod on the victim's node read", r.Status, r.Message, held)
	}
	if grew < 1 {
		t.Errorf("tailor_kubelet_pages_refused_total{page=resource} grew by %v, want at least 1", grew)
	}
	v := victim.readyOf()
	t.Logf("the victim's node %s: page %d bytes; its policy: Ready=%s %s; recommendation %s", victim.node, kubelets.size(victim.node), v.Status, v.Message, victim.recommendation())
	if v.Status != metav1.ConditionTrue || strings.Contains(v.Message, "held") {
		t.Errorf("the victim's policy, its node's page within the cap: Ready %s %q, want True with nothing held", v.Status, v.Message)
	}
	if victim.recommendation() == "none" {
		t.Errorf("the victim's pod, its node's page within the cap, has no recommendation: %+v", victim.getPolicy("web").Status.Conditions)
	}
	w.sameAsControl(t)
}

// newKubeletRedTeam is the world with its controller reading each node's
// kubelet directly (pageKubelets), as the manager does by default, pages
// capped at maxPage bytes; each namespace has pod web-0 (0.1 cores, 100Mi)
// on its node, under policy web.
func newKubeletRedTeam(t *testing.T, maxPage int64) (*redTeam, *pageKubelets) {
	t.Helper()
	w := newRedTeam(t, controllerOptions{})
	e := w.tenant
	kubelets := newPageKubelets(t, e)
	for _, x := range w.envs() {
		kubelets.serve(x.node)
	}
	pages, err := kubeletsource.NewDirect(restConfig, func(ctx context.Context, name string) (*corev1.Node, error) {
		n := &corev1.Node{}
		return n, apiClient.Get(ctx, client.ObjectKey{Name: name}, n)
	}, kubeletsource.DirectOptions{CAFile: kubelets.caFile})
	if err != nil {
		t.Fatal(err)
	}
	w.use(kubeletsource.New(pages, kubeletsource.Options{MaxPageBytes: maxPage, ShareFor: -1, Clock: e.clock, Registerer: ctrlmetrics.Registry}))
	for _, x := range w.envs() {
		x.pod("web", webPod("web-0"))
		x.source.Set(x.ns, "web-0", "app", 0.1, 100*mi)
		x.policy("web", nil)
	}
	return w, kubelets
}

// ballast is the tenant's pod of 64 containers with the longest names
// there are, bound to its node by hand: about 21KB of its node's
// /metrics/resource.
func (w *redTeam) ballast() {
	b := builder.Pod("ballast")
	for i := range 64 {
		b.Container(builder.Container(fmt.Sprintf("ballast-%02d-%s", i, strings.Repeat("x", 52))).Requests("1m", "1Mi"))
	}
	w.tenant.pod("ballast", b)
}

// pageKubelets stand in for the kubelets' metrics endpoints, one TLS
// server per node on a port of 127.0.0.1 (the node's InternalIP and
// kubelet port say which). Each serves /metrics/resource as a kubelet
// does: a CPU counter and a working set for each container of the pods
// bound to its node, at the figures the scripted source holds (a
// millicore and 1Mi for a container it has none for), stamped with the
// fake clock. So a node's page grows with the containers on it.
type pageKubelets struct {
	e      *env
	caFile string

	mu    sync.Mutex
	sizes map[string]int
}

func newPageKubelets(t *testing.T, e *env) *pageKubelets {
	return &pageKubelets{e: e, caFile: filepath.Join(t.TempDir(), "kubelet-ca.crt"), sizes: map[string]int{}}
}

// serve starts node's kubelet and points the node at it.
func (k *pageKubelets) serve(node string) {
	e := k.e
	e.t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics/resource" {
			http.NotFound(rw, r)
			return
		}
		page, err := k.page(r.Context(), node)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		k.mu.Lock()
		k.sizes[node] = len(page)
		k.mu.Unlock()
		_, _ = rw.Write(page)
	}))
	e.t.Cleanup(srv.Close)
	// Every httptest server has the same self-signed certificate.
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(k.caFile, ca, 0o600); err != nil {
		e.t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		e.t.Fatal(err)
	}
	n := &corev1.Node{}
	if err := apiClient.Get(e.ctx, client.ObjectKey{Name: node}, n); err != nil {
		e.t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(p)
	if err := apiClient.Status().Update(e.ctx, n); err != nil {
		e.t.Fatalf("pointing node %s at its kubelet: %v", node, err)
	}
}

// size is the length of node's last page.
func (k *pageKubelets) size(node string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sizes[node]
}

func (k *pageKubelets) page(ctx context.Context, node string) ([]byte, error) {
	var list corev1.PodList
	if err := apiClient.List(ctx, &list, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	res, err := k.e.source.Usage(ctx, pods)
	if err != nil {
		return nil, err
	}
	now := k.e.clock.Now()
	ms, secs := now.UnixMilli(), now.Sub(k.e.start).Seconds()
	var cpu, mem bytes.Buffer
	cpu.WriteString("# TYPE container_cpu_usage_seconds_total counter\n")
	mem.WriteString("# TYPE container_memory_working_set_bytes gauge\n")
	for _, p := range pods {
		for _, c := range podcontainers.Names(p) {
			u, ok := res.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c}]
			if !ok {
				u.CPU, u.Memory = 0.001, mi
			}
			series := fmt.Sprintf(`{container=%q,namespace=%q,pod=%q}`, c, p.Namespace, p.Name)
			fmt.Fprintf(&cpu, "container_cpu_usage_seconds_total%s %g %d\n", series, u.CPU*secs, ms)
			fmt.Fprintf(&mem, "container_memory_working_set_bytes%s %g %d\n", series, u.Memory, ms)
		}
	}
	return append(cpu.Bytes(), mem.Bytes()...), nil
}
