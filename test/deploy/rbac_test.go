//go:build e2e

package deploy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailorhq/tailor/test/cluster"
)

// access is one request the manager's ServiceAccount may or may not make.
// Namespace "" is cluster scope; ownNamespace stands for the install's,
// watchedNamespace for each a tenant's install watches. name, if set, is
// the one object asked for.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

const (
	ownNamespace     = "<own>"
	watchedNamespace = "<watched>"
)

// watchedSuffixes name a tenant install's namespaces after the install's:
// namespace-a and namespace-b.
var watchedSuffixes = []string{"-a", "-b"}

// otherNamespace is a namespace tailor is not installed in: cluster-wide
// grants must reach it, namespaced ones must not.
const otherNamespace = "default"

func (a access) String() string {
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.name != "" {
		r += " " + a.name
	}
	ns := a.namespace
	if ns == "" {
		ns = "(cluster)"
	}
	return fmt.Sprintf("%s %s in %s", a.verb, r, ns)
}

func accesses(verbs []string, group, resource, subresource, namespace string) []access {
	var out []access
	for _, v := range verbs {
		out = append(out, access{v, group, resource, subresource, namespace, ""})
	}
	return out
}

// named is each access of as asked for the object name alone.
func named(name string, as []access) []access {
	out := slices.Clone(as)
	for i := range out {
		out[i].name = name
	}
	return out
}

// always is what the manager of a cluster-wide install that sizes new
// pods (the default) needs: what it reads, and what it writes, everywhere.
var always = slices.Concat(reads, writes(otherNamespace), replace(otherNamespace))

// reads are bound cluster-wide in every install.
var reads = slices.Concat(
	// The policy controller: policies, and the checkpoints it restores.
	accesses([]string{"get", "list", "watch"}, "autoscaling.tailor.dev", "tailorpolicies", "", otherNamespace),
	accesses([]string{"get", "list", "watch"}, "autoscaling.tailor.dev", "tailorcheckpoints", "", otherNamespace),
	// Pods (informer and actuator's follow), everywhere: a node's room
	// counts every pod on it.
	accesses([]string{"get", "list", "watch"}, "", "pods", "", otherNamespace),
	accesses([]string{"list", "watch"}, "", "pods", "", ""),
	// The namespace's rules every size is planned within, from the cache.
	accesses([]string{"get", "list", "watch"}, "", "limitranges", "", otherNamespace),
	accesses([]string{"get", "list", "watch"}, "", "resourcequotas", "", otherNamespace),
	// Nodes for headroom; the cached client lists and watches them.
	accesses([]string{"get", "list", "watch"}, "", "nodes", "", ""),
	// The dashboard lists a policy's recent events.
	accesses([]string{"list"}, "events.k8s.io", "events", "", otherNamespace),
	// targetRef workloads: only their spec.selector is read.
	accesses([]string{"get"}, "apps", "deployments", "", otherNamespace),
	accesses([]string{"get"}, "apps", "statefulsets", "", otherNamespace),
	accesses([]string{"get"}, "apps", "daemonsets", "", otherNamespace),
	accesses([]string{"get"}, "batch", "jobs", "", otherNamespace),
	// ReplicaSets' metadata, from the cache: a pod's owner chain to its
	// Deployment (and a targetRef to a ReplicaSet).
	accesses([]string{"get", "list", "watch"}, "apps", "replicasets", "", otherNamespace),
	// HorizontalPodAutoscalers, from the cache: which requests they divide by.
	accesses([]string{"get", "list", "watch"}, "autoscaling", "horizontalpodautoscalers", "", otherNamespace),
	// VerticalPodAutoscalers, from the cache when their CRD is installed:
	// a workload one sizes is held.
	accesses([]string{"get", "list", "watch"}, "autoscaling.k8s.io", "verticalpodautoscalers", "", otherNamespace),
	// The secure metrics endpoint asks who a scraper is and whether it may
	// get /metrics; the agent source reviews the agents' tokens with the
	// same right.
	tokenReview,
	accesses([]string{"create"}, "authorization.k8s.io", "subjectaccessreviews", "", ""),
)

// writes are what the manager writes in ns, where policies are: every
// namespace of a cluster-wide install, a tenant's own (watchedNamespace)
// only.
func writes(ns string) []access {
	return slices.Concat(
		accesses([]string{"patch"}, "autoscaling.tailor.dev", "tailorpolicies", "status", ns),
		// Checkpoints are the manager's own: it writes, restores and
		// deletes them. No status subresource: the data is in spec.
		accesses([]string{"create", "update", "patch", "delete"}, "autoscaling.tailor.dev", "tailorcheckpoints", "", ns),
		// Pods are resized only through pods/resize.
		accesses([]string{"patch"}, "", "pods", "resize", ns),
		// Events on pods and policies.
		accesses([]string{"create", "patch"}, "events.k8s.io", "events", "", ns),
	)
}

// replace is the delete, in ns, of a pod tailor sized that no node has
// room for, for its controller to create smaller (placement.DecideStuck),
// granted where an admission policy of tailor's sizes pods; the guard
// refuses every other pod's (TestGuardOnTheCluster).
func replace(ns string) []access {
	return accesses([]string{"delete"}, "", "pods", "", ns)
}

// leaderElection is the Lease and its events in the install's namespace.
var leaderElection = slices.Concat(
	accesses([]string{"get", "create", "update"}, "coordination.k8s.io", "leases", "", ownNamespace),
	accesses([]string{"create", "patch"}, "", "events", "", ownNamespace),
)

var (
	// The kubelets are read on their port, authorized as nodes/metrics;
	// through the apiserver proxy (kubelet.readVia apiserver-proxy) as
	// nodes/proxy, which reaches every kubelet endpoint, exec included.
	kubeletSource       = accesses([]string{"get"}, "", "nodes", "metrics", "")
	kubeletProxy        = accesses([]string{"get"}, "", "nodes", "proxy", "")
	metricsServerSource = accesses([]string{"list"}, "metrics.k8s.io", "pods", "", otherNamespace)
	eviction            = accesses([]string{"create"}, "", "pods", "eviction", otherNamespace)
	// The manager reviews tokens: its metrics' scrapers', and with the node
	// agent the agents'.
	tokenReview = accesses([]string{"create"}, "authentication.k8s.io", "tokenreviews", "", "")
	// With the node agent the manager keeps the reports' certificate and
	// publishes its CA, in its own namespace: those two objects by name,
	// and create, which RBAC cannot narrow to a name.
	agentTLS = slices.Concat(
		named("tailor-agent-tls", accesses([]string{"get", "update"}, "", "secrets", "", ownNamespace)),
		named("tailor-agent-ca", accesses([]string{"get", "update"}, "", "configmaps", "", ownNamespace)),
		accesses([]string{"create"}, "", "secrets", "", ownNamespace),
		accesses([]string{"create"}, "", "configmaps", "", ownNamespace),
	)
)

// agentCan is all the node agent's ServiceAccount may do: find the
// managers. agentNever is what it must not, a sample of the rest: it
// writes nothing and reads no pod, node or secret.
var (
	agentCan = slices.Concat(
		accesses([]string{"get", "list", "watch"}, "discovery.k8s.io", "endpointslices", "", ownNamespace),
		// The managers' CA bundle, and nothing else of theirs.
		named("tailor-agent-ca", accesses([]string{"get", "list", "watch"}, "", "configmaps", "", ownNamespace)),
	)
	agentNever = slices.Concat(
		// Never a key: not the reports' Secret, nor any other.
		named("tailor-agent-tls", accesses([]string{"get", "list", "watch"}, "", "secrets", "", ownNamespace)),
		accesses([]string{"list", "watch"}, "", "configmaps", "", ownNamespace),
		named("kube-root-ca.crt", accesses([]string{"get"}, "", "configmaps", "", ownNamespace)),
		named("tailor-agent-ca", accesses([]string{"update", "patch", "delete"}, "", "configmaps", "", ownNamespace)),
		named("tailor-agent-ca", accesses([]string{"get"}, "", "configmaps", "", otherNamespace)),
		accesses([]string{"list", "watch"}, "discovery.k8s.io", "endpointslices", "", otherNamespace),
		accesses([]string{"create", "update", "patch", "delete"}, "discovery.k8s.io", "endpointslices", "", ownNamespace),
		accesses([]string{"get", "list", "watch"}, "", "pods", "", otherNamespace),
		accesses([]string{"patch"}, "", "pods", "resize", otherNamespace),
		// A pod tailor sized that no node has room for is deleted, for its
		// controller to create smaller (placement.DecideStuck).
		accesses([]string{"delete"}, "", "pods", "", otherNamespace),
		// The namespace's rules every size is planned within, from the cache.
		accesses([]string{"get", "list", "watch"}, "", "limitranges", "", otherNamespace),
		accesses([]string{"get", "list", "watch"}, "", "resourcequotas", "", otherNamespace),
		accesses([]string{"get"}, "", "nodes", "", ""),
		accesses([]string{"get"}, "", "nodes", "proxy", ""),
		accesses([]string{"get", "list"}, "", "secrets", "", ownNamespace),
		accesses([]string{"create"}, "authentication.k8s.io", "tokenreviews", "", ""),
		accesses([]string{"create"}, "events.k8s.io", "events", "", otherNamespace),
		accesses([]string{"get", "update"}, "coordination.k8s.io", "leases", "", ownNamespace),
		accesses([]string{"get", "list"}, "autoscaling.tailor.dev", "tailorpolicies", "", otherNamespace),
	)
)

// never is what the manager must not be able to do in any configuration.
var never = slices.Concat(
	// Pods change only through pods/resize (and eviction, when opted in).
	accesses([]string{"create", "update", "patch", "delete", "deletecollection"}, "", "pods", "", otherNamespace),
	accesses([]string{"update", "patch"}, "", "pods", "status", otherNamespace),
	accesses([]string{"update"}, "", "pods", "resize", otherNamespace),
	accesses([]string{"create", "get"}, "", "pods", "exec", otherNamespace),
	accesses([]string{"create", "get"}, "", "pods", "attach", otherNamespace),
	accesses([]string{"create", "get"}, "", "pods", "portforward", otherNamespace),
	accesses([]string{"get"}, "", "pods", "log", otherNamespace),
	// The kubelet's other endpoints (exec, logs, pods) through the proxy.
	accesses([]string{"create"}, "", "nodes", "proxy", ""),
	// No secrets, anywhere.
	accesses([]string{"get", "list", "watch"}, "", "secrets", "", otherNamespace),
	accesses([]string{"get", "list"}, "", "secrets", "", ownNamespace),
	accesses([]string{"list"}, "", "secrets", "", ""),
	accesses([]string{"get"}, "", "configmaps", "", otherNamespace),
	// The agents' TLS: only the two objects by name, in the install's
	// namespace; no other Secret or ConfigMap, no list, no delete.
	named("tailor-agent-tls", accesses([]string{"list", "watch", "patch", "delete"}, "", "secrets", "", ownNamespace)),
	named("tailor-agent-tls", accesses([]string{"get", "update", "create"}, "", "secrets", "", otherNamespace)),
	named("tailor-other", accesses([]string{"get", "update"}, "", "secrets", "", ownNamespace)),
	named("kube-root-ca.crt", accesses([]string{"get", "update"}, "", "configmaps", "", ownNamespace)),
	named("tailor-agent-ca", accesses([]string{"delete"}, "", "configmaps", "", ownNamespace)),
	accesses([]string{"list"}, "", "configmaps", "", ownNamespace),
	// Policies are the user's: only their status is written.
	accesses([]string{"create", "update", "patch", "delete"}, "autoscaling.tailor.dev", "tailorpolicies", "", otherNamespace),
	accesses([]string{"update"}, "autoscaling.tailor.dev", "tailorpolicies", "status", otherNamespace),
	// Checkpoints are deleted one by one, never by collection.
	accesses([]string{"deletecollection"}, "autoscaling.tailor.dev", "tailorcheckpoints", "", otherNamespace),
	// Workloads are read, one by one, never changed.
	accesses([]string{"list", "update", "patch", "delete"}, "apps", "deployments", "", otherNamespace),
	accesses([]string{"update", "patch"}, "apps", "deployments", "scale", otherNamespace),
	accesses([]string{"list", "delete"}, "batch", "jobs", "", otherNamespace),
	// HPAs are read, never changed.
	accesses([]string{"create", "update", "patch", "delete"}, "autoscaling", "horizontalpodautoscalers", "", otherNamespace),
	// Nodes are read only.
	accesses([]string{"update", "patch", "delete"}, "", "nodes", "", ""),
	accesses([]string{"patch"}, "", "nodes", "status", ""),
	// The Lease is the install's own; nobody else's.
	accesses([]string{"get", "update"}, "coordination.k8s.io", "leases", "", otherNamespace),
	accesses([]string{"get", "update"}, "coordination.k8s.io", "leases", "", "kube-system"),
	accesses([]string{"delete"}, "coordination.k8s.io", "leases", "", ownNamespace),
	// Core events only on the Lease, in the install's namespace.
	accesses([]string{"create"}, "", "events", "", otherNamespace),
	accesses([]string{"delete"}, "events.k8s.io", "events", "", otherNamespace),
	// No way to widen its own rights.
	accesses([]string{"create", "bind", "escalate"}, "rbac.authorization.k8s.io", "clusterroles", "", ""),
	accesses([]string{"create"}, "rbac.authorization.k8s.io", "clusterrolebindings", "", ""),
	accesses([]string{"impersonate"}, "", "serviceaccounts", "", otherNamespace),
	accesses([]string{"create"}, "", "serviceaccounts", "token", otherNamespace),
	accesses([]string{"update"}, "apiextensions.k8s.io", "customresourcedefinitions", "", ""),
)

// TestLeastPrivilege renders each install variant, applies its RBAC into a
// new deploy-* namespace and asks the apiserver, through
// SubjectAccessReviews, what the manager's ServiceAccount may do.
func TestLeastPrivilege(t *testing.T) {
	cluster.Shared(t)
	type render func(t *testing.T, namespace, prefix string) []*unstructured.Unstructured
	kustomize := func(components ...string) render {
		return func(t *testing.T, namespace, prefix string) []*unstructured.Unstructured {
			return renderKustomize(t, namespace, prefix, components...)
		}
	}
	helmChart := func(set ...string) render {
		return func(t *testing.T, namespace, prefix string) []*unstructured.Unstructured {
			// The release name becomes the cluster-scoped names' prefix.
			return renderHelm(t, strings.TrimSuffix(prefix, "-"), namespace, set...)
		}
	}
	// A tenant's install, with evictions: reads everywhere, every write in
	// its namespaces only.
	tenant := slices.Concat(reads, writes(watchedNamespace), replace(watchedNamespace),
		accesses([]string{"create"}, "", "pods", "eviction", watchedNamespace), leaderElection, kubeletSource)
	cases := map[string]struct {
		render     render
		wantSource string
		wantCan    []access
		// tenant: the install watches namespaces (watchedOf its prefix).
		tenant bool
	}{
		"kustomize default (kubelet source)": {
			render:     kustomize(),
			wantSource: "kubelet",
			wantCan:    slices.Concat(always, leaderElection, kubeletSource),
		},
		"kustomize metrics-server and eviction": {
			render:     kustomize("metrics-server", "eviction"),
			wantSource: "metrics-server",
			wantCan:    slices.Concat(always, leaderElection, metricsServerSource, eviction),
		},
		"kustomize prometheus": {
			render:     kustomize("prometheus"),
			wantSource: "prometheus",
			wantCan:    slices.Concat(always, leaderElection),
		},
		"helm default (kubelet source)": {
			render:     helmChart(),
			wantSource: "kubelet",
			wantCan:    slices.Concat(always, leaderElection, kubeletSource),
		},
		"helm metrics-server and evictions": {
			render:     helmChart("metricsSource=metrics-server", "evictions.enabled=true"),
			wantSource: "metrics-server",
			wantCan:    slices.Concat(always, leaderElection, metricsServerSource, eviction),
		},
		"helm prometheus without leader election": {
			render:     helmChart("metricsSource=prometheus", "leaderElection.enabled=false"),
			wantSource: "prometheus",
			wantCan:    always,
		},
		"helm kubelets through the apiserver proxy": {
			render:     helmChart("kubelet.readVia=apiserver-proxy"),
			wantSource: "kubelet",
			wantCan:    slices.Concat(always, leaderElection, kubeletProxy),
		},
		// No admission policy sizes a pod: no pod is tailor's to delete.
		"helm without admission policies, evictions": {
			render:     helmChart("admission.enabled=false", "evictions.enabled=true", "evictions.admissionPolicy=false"),
			wantSource: "kubelet",
			wantCan:    slices.Concat(reads, writes(otherNamespace), leaderElection, kubeletSource, eviction),
		},
		"helm tenant, evictions": {
			render: func(t *testing.T, namespace, prefix string) []*unstructured.Unstructured {
				w := watchedOf(prefix)
				return renderHelm(t, strings.TrimSuffix(prefix, "-"), namespace, "watchNamespaces={"+strings.Join(w, ",")+"}", "evictions.enabled=true")
			},
			wantSource: "kubelet",
			wantCan:    tenant,
			tenant:     true,
		},
		"kustomize config/samples/tenant, evictions": {
			render: func(t *testing.T, namespace, prefix string) []*unstructured.Unstructured {
				w := watchedOf(prefix)
				objs := renderTenantSampleFor(t, w[0], w[1], true)
				// The sample installs into tailor-<its first namespace>:
				// moved into the test's.
				for _, o := range objs {
					if o.GetNamespace() == "tailor-"+w[0] {
						o.SetNamespace(namespace)
					}
					if o.GetKind() == "Namespace" && o.GetName() == "tailor-"+w[0] {
						o.SetName(namespace)
					}
					moveSubjects(o, "tailor-"+w[0], namespace)
				}
				return objs
			},
			wantSource: "kubelet",
			wantCan:    tenant,
			tenant:     true,
		},
		"kustomize agent": {
			// config/default with the agent component, and config/agent,
			// as docs/agent.md installs them: here into one namespace.
			render: func(t *testing.T, namespace, prefix string) []*unstructured.Unstructured {
				return renderKustomizeAgent(t, namespace, namespace, prefix)
			},
			wantSource: "agent",
			wantCan:    slices.Concat(always, leaderElection, kubeletSource, tokenReview, agentTLS),
		},
		"helm agent": {
			render:     helmChart("agent.enabled=true"),
			wantSource: "agent",
			wantCan:    slices.Concat(always, leaderElection, kubeletSource, tokenReview, agentTLS),
		},
		"helm agent, certificate provided": {
			render:     helmChart("agent.enabled=true", "agent.tls.provided=true"),
			wantSource: "agent",
			wantCan: slices.Concat(always, leaderElection, kubeletSource, tokenReview,
				named("tailor-agent-tls", accesses([]string{"get"}, "", "secrets", "", ownNamespace)),
				named("tailor-agent-ca", accesses([]string{"get", "update"}, "", "configmaps", "", ownNamespace)),
				accesses([]string{"create"}, "", "configmaps", "", ownNamespace)),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			id := rand.String(5)
			namespace := "deploy-" + id
			prefix := clusterPrefix + id + "-"
			var watched []string
			if tc.tenant {
				watched = watchedOf(prefix)
			}
			objs := tc.render(t, namespace, prefix)
			in := install(ctx, t, namespace, watched, objs, applied)
			if diff := cmp.Diff(tc.wantSource, metricsSource(t, in.deployment)); diff != "" {
				t.Errorf("--metrics-source (-want,+got):\n%s", diff)
			}
			dryRunPod(ctx, t, in)

			// Everything asked: what it must be able to do, plus what any
			// configuration grants, plus what none may.
			in.checkAccess(ctx, t, in.serviceAccount, tc.wantCan,
				slices.Concat(always, leaderElection, kubeletSource, kubeletProxy, metricsServerSource, eviction, tokenReview, agentTLS, never))
			if (tc.wantSource == "agent") != (in.agentServiceAccount != "") {
				t.Fatalf("agent ServiceAccount %q rendered with --metrics-source=%s", in.agentServiceAccount, tc.wantSource)
			}
			if in.agentServiceAccount != "" {
				in.checkAccess(ctx, t, in.agentServiceAccount, agentCan, agentNever)
			}
		})
	}
}

// checkAccess asks the apiserver, as ServiceAccount sa of the install,
// every access in can and cannot, and requires exactly those in can to be
// allowed (one in both is wanted).
func (in installed) checkAccess(ctx context.Context, t *testing.T, sa string, can, cannot []access) {
	t.Helper()
	want := map[string]bool{}
	var all, granted []access
	ask := func(a access, allowed bool) {
		if _, seen := want[a.String()]; !seen {
			all = append(all, a)
		}
		want[a.String()] = allowed
	}
	for _, a := range cannot {
		for _, r := range in.resolve(a) {
			ask(r, false)
		}
	}
	for _, a := range can {
		for _, r := range in.resolve(a) {
			granted = append(granted, r)
			ask(r, true)
		}
	}
	// RBAC reaches the authorizer through its informers: wait (up to 30s)
	// until every granted access is seen, then compare everything.
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		seen, err := in.reviewAs(ctx, sa, granted)
		if err != nil {
			return false, err
		}
		for _, ok := range seen {
			if !ok {
				return false, nil
			}
		}
		return true, nil
	})
	got, err := in.reviewAs(ctx, sa, all)
	if err != nil {
		t.Fatalf("reviewing the access of %s: %v", sa, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("access of ServiceAccount %s/%s (-want,+got):\n%s", in.namespace, sa, diff)
	}
}

// resolve puts the install's namespace in place of ownNamespace, and
// each namespace it watches in place of watchedNamespace.
func (in installed) resolve(a access) []access {
	switch a.namespace {
	case ownNamespace:
		a.namespace = in.namespace
	case watchedNamespace:
		var out []access
		for _, ns := range in.watched {
			a.namespace = ns
			out = append(out, a)
		}
		return out
	}
	return []access{a}
}

// watchedOf are the namespaces a tenant's install with cluster-scoped
// names prefixed prefix watches in these tests: named after the prefix,
// so that config/samples/tenant, which prefixes its names with its first
// namespace's, keeps them under clusterPrefix.
func watchedOf(prefix string) []string {
	var out []string
	for _, s := range watchedSuffixes {
		out = append(out, strings.TrimSuffix(prefix, "-")+s)
	}
	return out
}

// reviewAs asks the apiserver whether ServiceAccount sa of the install's
// namespace may make each request.
func (in installed) reviewAs(ctx context.Context, sa string, all []access) (map[string]bool, error) {
	got := map[string]bool{}
	for _, a := range all {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   fmt.Sprintf("system:serviceaccount:%s:%s", in.namespace, sa),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + in.namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace:   a.namespace,
				Verb:        a.verb,
				Group:       a.group,
				Resource:    a.resource,
				Subresource: a.subresource,
				Name:        a.name,
			},
		}}
		res, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("reviewing %s: %w", a, err)
		}
		if res.Status.EvaluationError != "" {
			return nil, fmt.Errorf("reviewing %s: %s", a, res.Status.EvaluationError)
		}
		got[a.String()] = res.Status.Allowed
	}
	return got, nil
}

// metricsSource is the manager's --metrics-source argument.
func metricsSource(t *testing.T, deployment *unstructured.Unstructured) string {
	t.Helper()
	containers, _, err := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	if err != nil || len(containers) != 1 {
		t.Fatalf("deployment %s: want one container, got %d (%v)", deployment.GetName(), len(containers), err)
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	source := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--metrics-source="); ok {
			if source != "" {
				t.Fatalf("deployment %s passes --metrics-source twice: %v", deployment.GetName(), args)
			}
			source = v
		}
	}
	return source
}
