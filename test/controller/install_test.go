//go:build controller

package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/test/manifests"
)

// The install checks: every object the chart renders for each values case
// below, every object kubectl kustomize builds from config/, and every
// object of the released chart, applied to this apiserver as a server-side
// dry run with strict field validation, none with a warning; and each
// Deployment's and DaemonSet's pod template created, dry run, as a pod in
// its namespace, which its Pod Security level must admit.

// tool is the binary make controller names in env: the pinned helm
// (TAILOR_HELM), the kubectl of the Kubernetes release the local cluster
// runs (TAILOR_KUBECTL).
func tool(t *testing.T, env string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set: run make controller, which sets it", env)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v (make controller builds it)", env, err)
	}
	return p
}

var (
	repoRoot = filepath.Join("..", "..")
	chartDir = filepath.Join(repoRoot, "deploy", "helm", "tailor")
)

// optionalAPIs are the kinds the chart renders only where the server
// serves them (helm's capabilities): MutatingAdmissionPolicy,
// ValidatingAdmissionPolicy (the guard), and the Prometheus Operator's,
// whose CRDs TestMain installs from test/testdata.
// TestInstallServesOptionalAPIs checks that this apiserver serves them
// all, so a render told they are served is the render this server gets.
var optionalAPIs = []string{
	"admissionregistration.k8s.io/v1/MutatingAdmissionPolicy",
	"admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy",
	"monitoring.coreos.com/v1/ServiceMonitor",
	"monitoring.coreos.com/v1/PodMonitor",
	"monitoring.coreos.com/v1/PrometheusRule",
}

func TestInstallServesOptionalAPIs(t *testing.T) {
	for _, gvk := range optionalAPIs {
		i := strings.LastIndex(gvk, "/")
		gv, kind := gvk[:i], gvk[i+1:]
		list, err := clientset.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Errorf("%s: %v", gvk, err)
			continue
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == kind }) {
			t.Errorf("the apiserver does not serve %s", gvk)
		}
	}
}

// installNamespaces are the namespaces the helm cases install into, made
// for each run: the release's (restricted, as docs/install.md wants the
// managers'; privileged where the agent shares it), the agent's own
// (made by the user, labelled privileged, or by the chart) and the
// Grafana sidecar's.
type installNamespaces struct {
	restricted, privileged, nodes, nodesByChart, grafana string
}

// helmCase is one values combination.
type helmCase struct {
	set     []string
	setJSON []string
	// servedNone renders for a server that serves none of optionalAPIs;
	// otherwise it serves them all, as this one does.
	servedNone bool
	// privileged puts the release in the namespace that enforces the
	// privileged Pod Security level: the agent runs in the release
	// namespace, which docs/install.md says must then be privileged.
	privileged bool
}

// helmCases are the values combinations the chart is checked with. Every
// value a template tests (an if, with or range over it, directly or
// through a variable) is set away from its default alone, and every
// choice of an enum is taken (TestHelmCasesCoverTheChart fails when one is
// not). Pairs are the values a template tests together, or where one
// changes the content of an object the other turns on, read off the
// templates: the agent with its fallback source, its namespace, the
// NetworkPolicies, the PodMonitor, the alerts and shards; evictions with
// the admission policies and the alerts; the budget with replicas and
// shards; watchNamespaces with shards and both admission bindings; the
// ServiceMonitor with the metrics Service, metrics.secure and its
// certificate; the dashboard with the NetworkPolicies; the Prometheus
// client with each source that reads Prometheus. Not the cartesian
// product: values no template tests together render the same objects
// whatever the other is.
func helmCases(ns installNamespaces) map[string]helmCase {
	agentOwnNamespace := []string{"agent.enabled=true", "agent.namespace=" + ns.nodes}
	everything := []string{"replicaCount=2", "shards=2", "watchNamespaces={team-a,team-b}", "agent.enabled=true",
		"agent.namespace=" + ns.nodesByChart, "agent.createNamespace=true", "agent.priorityClassName=system-node-critical",
		"evictions.enabled=true", "dashboard.enabled=true", "dashboard.bindAddress=0.0.0.0",
		"monitoring.serviceMonitor.enabled=true", "monitoring.podMonitor.enabled=true", "monitoring.prometheusRule.enabled=true",
		"monitoring.grafanaDashboard.enabled=true", "networkPolicy.enabled=true"}
	return map[string]helmCase{
		"defaults":                              {},
		"defaults, nothing optional served":     {servedNone: true},
		"every option":                          {set: everything, setJSON: []string{`networkPolicy.dashboardFrom=[{"namespaceSelector":{"matchLabels":{"team":"ops"}}}]`}},
		"every option, nothing optional served": {servedNone: true, set: everything},
		"monitoring assumed served": {servedNone: true, set: []string{"monitoring.assumeServed=true",
			"monitoring.serviceMonitor.enabled=true", "monitoring.prometheusRule.enabled=true"}},

		// The metrics source, and what goes with each.
		"metrics-server":                      {set: []string{"metricsSource=metrics-server"}},
		"prometheus":                          {set: []string{"metricsSource=prometheus", "prometheusURL=https://prometheus.example.com:9090"}},
		"kubelet, no throttling":              {set: []string{"kubeletThrottling=false"}},
		"kubelet through the apiserver proxy": {set: []string{"kubelet.readVia=apiserver-proxy"}},
		"kubelet CA from a ConfigMap, address types, page cap": {set: []string{"kubelet.tls.ca.configMapName=kubelet-ca", "kubelet.tls.ca.key=bundle.pem",
			"kubelet.preferredAddressTypes={Hostname,InternalIP}", "kubelet.maxPageBytes=64Mi"}},
		"kubelet CA from a Secret":                  {set: []string{"kubelet.tls.ca.secretName=kubelet-ca"}},
		"kubelet unverified, page cap in bytes":     {set: []string{"kubelet.tls.insecureSkipVerify=true", "kubelet.maxPageBytes=67108864"}},
		"agent, kubelet fallback through the proxy": {set: append(slices.Clone(agentOwnNamespace), "kubelet.readVia=apiserver-proxy")},
		"prometheus bearer token":                   {set: []string{"metricsSource=prometheus", "prometheusClient.bearerToken.secretName=prom-token", "prometheusClient.bearerToken.key=tok"}},
		"prometheus basic auth, CA from a ConfigMap": {set: []string{"metricsSource=prometheus", "prometheusClient.basicAuth.username=tailor",
			"prometheusClient.basicAuth.secretName=prom-auth", "prometheusClient.ca.configMapName=prom-ca"}},
		"prometheus mutual TLS, CA from a Secret, headers": {set: []string{"metricsSource=prometheus", "prometheusClient.ca.secretName=prom-ca",
			"prometheusClient.clientCertSecretName=prom-client", "prometheusClient.headers.X-Scope-OrgID=team-a"}},
		"prometheus without verification":                        {set: []string{"metricsSource=prometheus", "prometheusClient.insecureSkipVerify=true"}},
		"kubelet, Prometheus for the canaries' query guardrails": {set: []string{"canaryGuardrailsPrometheus=true", "prometheusClient.bearerToken.secretName=prom-token"}},

		// The node agent: in the release namespace, in its own, with each
		// fallback, and with what it adds objects to.
		"agent in the release namespace": {privileged: true, set: []string{"agent.enabled=true"}},
		"agent in its own namespace":     {set: agentOwnNamespace},
		"agent namespace made by the chart": {set: []string{"agent.enabled=true", "agent.namespace=" + ns.nodesByChart,
			"agent.createNamespace=true"}},
		"agent namespace is the release's, not made": {privileged: true, set: []string{"agent.enabled=true",
			"agent.namespace=" + ns.privileged, "agent.createNamespace=true"}},
		"agent, metrics-server fallback": {set: append(agentOwnNamespace, "agent.fallback=metrics-server")},
		"agent, prometheus fallback with a token": {set: append(agentOwnNamespace, "agent.fallback=prometheus",
			"prometheusClient.bearerToken.secretName=prom-token")},
		"agent, no fallback":      {set: append(agentOwnNamespace, "agent.fallback=none")},
		"agent, JVM mode read":    {set: append(agentOwnNamespace, "agent.jvm=read")},
		"agent, JVM mode softmax": {set: append(agentOwnNamespace, "agent.jvm=softmax")},
		"agent, its certificate provided": {set: append(agentOwnNamespace, "agent.tls.provided=true", "agent.tls.secretName=agent-cert",
			"agent.tls.caConfigMap=agent-ca")},
		"agent, scheduled and sized": {set: append(agentOwnNamespace, "agent.priorityClassName=system-node-critical",
			"agent.nodeSelector.kubernetes\\.io/os=linux", "agent.image.repository=registry.example.com/tailor", "agent.image.tag=v9.9.9",
			"agent.interval=500ms", "agent.reportInterval=2s", "agent.resources.limits.memory=128Mi"),
			setJSON: []string{`agent.tolerations=[{"key":"dedicated","operator":"Equal","value":"infra","effect":"NoSchedule"}]`}},
		"agent with network policies":  {set: append(agentOwnNamespace, "networkPolicy.enabled=true")},
		"agent with its PodMonitor":    {set: append(agentOwnNamespace, "monitoring.podMonitor.enabled=true", "monitoring.podMonitor.labels.release=kps")},
		"agent with the alerts":        {set: append(agentOwnNamespace, "monitoring.prometheusRule.enabled=true")},
		"agent with shards":            {set: append(agentOwnNamespace, "shards=2")},
		"PodMonitor without the agent": {set: []string{"monitoring.podMonitor.enabled=true"}},

		// Admission and evictions.
		"no admission policy":                  {set: []string{"admission.enabled=false"}},
		"evictions":                            {set: []string{"evictions.enabled=true"}},
		"evictions without their policy":       {set: []string{"evictions.enabled=true", "evictions.admissionPolicy=false"}},
		"evictions without the new-pod policy": {set: []string{"evictions.enabled=true", "admission.enabled=false"}},
		"evictions with the alerts":            {set: []string{"evictions.enabled=true", "monitoring.prometheusRule.enabled=true"}},

		// Tenants and scale.
		"watchNamespaces":                   {set: []string{"watchNamespaces={team-a,team-b}"}},
		"watchNamespaces with evictions":    {set: []string{"watchNamespaces={team-a,team-b}", "evictions.enabled=true"}},
		"watchNamespaces without admission": {set: []string{"watchNamespaces={team-a}", "admission.enabled=false"}},
		"watchNamespaces sharded":           {set: []string{"watchNamespaces={team-a,team-b,team-c}", "shards=2"}},
		"shards":                            {set: []string{"shards=3"}},
		"replicas: a budget":                {set: []string{"replicaCount=2"}},
		"replicas, budget off":              {set: []string{"replicaCount=2", "podDisruptionBudget.enabled=false"}},
		"replicas, budget by percent":       {set: []string{"replicaCount=3", "podDisruptionBudget.maxUnavailable=50%"}},
		"a budget per shard":                {set: []string{"replicaCount=2", "shards=3"}},
		"no leader election":                {set: []string{"leaderElection.enabled=false"}},
		"tuned": {set: []string{"syncPeriod=30s", "checkpointInterval=5m", "concurrentSyncs=8", "kubeAPI.burst=80",
			"leaderElection.leaseDuration=15s", "leaderElection.renewDeadline=10s", "leaderElection.retryPeriod=2s", "allowResizePreemption=true"},
			// --set makes 50.5 a string, which the schema refuses.
			setJSON: []string{"kubeAPI.qps=50.5"}},

		// The dashboard.
		"dashboard":                 {set: []string{"dashboard.enabled=true", "dashboard.port=9000", "dashboard.historyPoints=60"}},
		"dashboard with prices":     {set: []string{"dashboard.enabled=true", "dashboard.prices.cpuCoreHour=0.031", "dashboard.prices.memoryGiBHour=0"}},
		"dashboard, network policy": {set: []string{"dashboard.enabled=true", "dashboard.bindAddress=0.0.0.0", "networkPolicy.enabled=true"}, setJSON: []string{`networkPolicy.dashboardFrom=[{"namespaceSelector":{"matchLabels":{"team":"ops"}},"podSelector":{"matchLabels":{"app":"proxy"}}}]`}},
		"network policy, own metrics peers": {set: []string{"networkPolicy.enabled=true"},
			setJSON: []string{`networkPolicy.metrics={"namespaceSelector":{"matchExpressions":[{"key":"team","operator":"In","values":["obs"]}]},"podSelector":{"matchLabels":{"app":"prometheus"}}}`}},

		// Metrics and monitoring.
		"plain metrics":         {set: []string{"metrics.secure=false"}},
		"plain metrics scraped": {set: []string{"metrics.secure=false", "monitoring.serviceMonitor.enabled=true"}},
		"metrics certificate scraped": {set: []string{"metrics.certSecret=tailor-metrics-cert", "monitoring.serviceMonitor.enabled=true",
			"monitoring.serviceMonitor.interval=15s", "monitoring.serviceMonitor.labels.release=kps"},
			setJSON: []string{`monitoring.serviceMonitor.tlsConfig={"ca":{"secret":{"name":"tailor-metrics-cert","key":"ca.crt"}},"serverName":"tailor-manager-metrics.svc"}`}},
		"no metrics Service":   {set: []string{"metrics.service.enabled=false"}},
		"metrics Service port": {set: []string{"metrics.service.port=9443"}},
		"alerts": {set: []string{"monitoring.prometheusRule.enabled=true", "monitoring.prometheusRule.labels.release=kps",
			"monitoring.prometheusRule.managerJob=tailor", "monitoring.prometheusRule.managerDownFor=1m"}},
		"Grafana dashboard": {set: []string{"monitoring.grafanaDashboard.enabled=true", "monitoring.grafanaDashboard.namespace=" + ns.grafana,
			"monitoring.grafanaDashboard.labels.team=ops", "monitoring.grafanaDashboard.annotations.grafana_folder=Tailor"}},

		// The pods, the image and the identity.
		"image": {set: []string{"image.repository=registry.example.com/mirror/tailor", "image.tag=v9.9.9", "image.pullPolicy=Always",
			"imagePullSecrets[0].name=regcred"}},
		"image never pulled":  {set: []string{"image.pullPolicy=Never"}},
		"service account":     {set: []string{"serviceAccount.name=tailor-custom", "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/t"}},
		"custom target kinds": {setJSON: []string{`rbac.extraTargetRules=[{"apiGroups":["argoproj.io"],"resources":["rollouts"],"verbs":["get"]}]`}},
		"manager pods": {set: []string{"podAnnotations.example\\.com/team=ops", "podLabels.team=ops", "priorityClassName=system-cluster-critical",
			"nodeSelector.kubernetes\\.io/os=linux", "resources.requests.cpu=200m", "resources.limits.memory=1Gi"},
			setJSON: []string{
				`tolerations=[{"key":"dedicated","operator":"Exists","effect":"NoSchedule"}]`,
				`affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64","arm64"]}]}]}}}`,
				`extraEnv=[{"name":"GOMEMLIMIT","value":"400MiB"}]`,
				`podSecurityContext={"runAsNonRoot":true,"runAsUser":10001,"runAsGroup":10001,"fsGroup":10001,"seccompProfile":{"type":"RuntimeDefault"}}`,
			}},
	}
}

// render runs helm template for c into the namespace it names.
func (c helmCase) render(t *testing.T, helm, chart, release string, ns installNamespaces) ([]*unstructured.Unstructured, error) {
	t.Helper()
	h := manifests.HelmTemplate{Helm: helm, Chart: chart, Release: release, Namespace: ns.restricted, Set: c.set, SetJSON: c.setJSON}
	if c.privileged {
		h.Namespace = ns.privileged
	}
	if !c.servedNone {
		h.APIVersions = optionalAPIs
	}
	return h.Objects()
}

// makeInstallNamespaces creates the namespaces the helm cases install
// into, each enforcing the Pod Security level docs/install.md asks for.
func makeInstallNamespaces(t *testing.T) installNamespaces {
	t.Helper()
	id := rand.String(5)
	ns := installNamespaces{restricted: "inst-" + id, privileged: "inst-" + id + "-priv", nodes: "inst-" + id + "-nodes",
		nodesByChart: "inst-" + id + "-chart-nodes", grafana: "inst-" + id + "-grafana"}
	for name, level := range map[string]string{ns.restricted: "restricted", ns.privileged: "privileged", ns.nodes: "privileged", ns.grafana: "restricted"} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}}
		if err := apiClient.Create(context.Background(), n); err != nil {
			t.Fatalf("creating namespace %s: %v", name, err)
		}
	}
	return ns
}

// TestHelmValuesDryRun renders the chart with each of helmCases and sends
// every object to the apiserver as a server-side dry run.
func TestHelmValuesDryRun(t *testing.T) {
	helm := tool(t, "TAILOR_HELM")
	ns := makeInstallNamespaces(t)
	ensureNamespaces(t, tenantNamespaces...)
	cases := helmCases(ns)
	renders := map[string][]*unstructured.Unstructured{}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(2)
	for name, c := range cases {
		g.Go(func() error {
			objs, err := c.render(t, helm, chartDir, "tailor", ns)
			if err != nil {
				return fmt.Errorf("case %q: %w", name, err)
			}
			mu.Lock()
			renders[name] = objs
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	dryRunAll(t, renders)
}

// rendered is one distinct object, with the renders that made it.
type rendered struct {
	obj *unstructured.Unstructured
	by  []string
}

// dryRunAll sends every distinct object of renders (by render name) to the
// apiserver: the Namespaces they make for real, then everything else as a
// server-side dry run with strict field validation, and each Deployment's
// and DaemonSet's pod template as a pod, dry run, in its namespace. Each
// object refused, or answered with a warning, fails the test, naming the
// renders that made it.
func dryRunAll(t *testing.T, renders map[string][]*unstructured.Unstructured) {
	t.Helper()
	problems, summary := sendRenders(t, renders)
	for _, p := range problems {
		t.Error(p)
	}
	t.Log(summary)
}

// sendRenders is dryRunAll's work: it returns what the apiserver refused or
// warned about, and a line saying what was sent.
func sendRenders(t *testing.T, renders map[string][]*unstructured.Unstructured) (problems []string, summary string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	applier, err := manifests.NewApplier(restConfig, "tailor-install-test")
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]*rendered{}
	var keys []string
	names := make([]string, 0, len(renders))
	for name := range renders {
		names = append(names, name)
	}
	sort.Strings(names)
	total := 0
	for _, name := range names {
		for _, o := range renders[name] {
			total++
			data, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			key := hex.EncodeToString(sum[:])
			if d, ok := distinct[key]; ok {
				d.by = append(d.by, name)
				continue
			}
			distinct[key] = &rendered{obj: o, by: []string{name}}
			keys = append(keys, key)
		}
	}
	var mu sync.Mutex
	report := func(d *rendered, what string, res manifests.Result, err error) {
		mu.Lock()
		defer mu.Unlock()
		by := d.by
		if len(by) > 3 {
			by = append(by[:3:3], fmt.Sprintf("%d more", len(d.by)-3))
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %s %s, rendered by %q: %v", d.obj.GetKind(), manifests.Name(d.obj), what, by, err))
		}
		for _, w := range res.Warnings {
			problems = append(problems, fmt.Sprintf("%s %s %s, rendered by %q: warning: %s", d.obj.GetKind(), manifests.Name(d.obj), what, by, w))
		}
	}
	// The namespaces the renders make exist before anything goes in them.
	for _, key := range keys {
		if d := distinct[key]; d.obj.GetKind() == "Namespace" {
			res, err := applier.Apply(ctx, d.obj)
			report(d, "applied", res, err)
		}
	}
	kinds := map[string]int{}
	var g errgroup.Group
	g.SetLimit(4)
	for _, key := range keys {
		d := distinct[key]
		kinds[d.obj.GetKind()]++
		if d.obj.GetKind() == "Namespace" {
			continue
		}
		g.Go(func() error {
			res, err := applier.DryRun(ctx, d.obj)
			report(d, "dry-run applied", res, err)
			if pod := templatePod(d.obj); pod != nil && err == nil {
				res, err := applier.DryRun(ctx, pod)
				report(d, "as a pod "+pod.GetName(), res, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	sort.Strings(problems)
	return problems, fmt.Sprintf("%d renders, %d objects, %d distinct sent to the apiserver; by kind: %v", len(renders), total, len(distinct), kinds)
}

// templatePod is the pod a Deployment's or DaemonSet's template makes, in its
// namespace, or nil for other kinds.
func templatePod(o *unstructured.Unstructured) *unstructured.Unstructured {
	if k := o.GetKind(); k != "Deployment" && k != "DaemonSet" {
		return nil
	}
	tmpl, found, err := unstructured.NestedMap(o.Object, "spec", "template")
	if err != nil || !found {
		return nil
	}
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": tmpl["metadata"], "spec": tmpl["spec"]}}
	pod.SetName(o.GetName() + "-template")
	pod.SetNamespace(o.GetNamespace())
	return pod
}

// TestInstallChecksRefuse: the checks above can fail. Each object here is
// one the chart renders, broken the way an edit of a template could break
// it; the apiserver must refuse it, or warn, and the check must say so.
func TestInstallChecksRefuse(t *testing.T) {
	helm := tool(t, "TAILOR_HELM")
	ns := makeInstallNamespaces(t)
	objs, err := helmCase{set: []string{"monitoring.serviceMonitor.enabled=true"}}.render(t, helm, chartDir, "tailor", ns)
	if err != nil {
		t.Fatal(err)
	}
	broken := func(kind string, breakIt func(o map[string]any)) *unstructured.Unstructured {
		t.Helper()
		for _, o := range objs {
			if o.GetKind() == kind {
				o = o.DeepCopy()
				breakIt(o.Object)
				return o
			}
		}
		t.Fatalf("the render has no %s", kind)
		return nil
	}
	container := func(o map[string]any) map[string]any {
		containers, _, _ := unstructured.NestedSlice(o, "spec", "template", "spec", "containers")
		return containers[0].(map[string]any)
	}
	setContainer := func(o map[string]any, c map[string]any) {
		if err := unstructured.SetNestedSlice(o, []any{c}, "spec", "template", "spec", "containers"); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		obj  *unstructured.Unstructured
		want string
	}{
		"a field misspelt": {broken("Deployment", func(o map[string]any) {
			c := container(o)
			c["resourcez"] = c["resources"]
			setContainer(o, c)
		}), `.spec.template.spec.containers[name="manager"].resourcez: field not declared in schema`},
		"a value out of range": {broken("Deployment", func(o map[string]any) {
			_ = unstructured.SetNestedField(o, int64(-1), "spec", "replicas")
		}), "spec.replicas: Invalid value: -1"},
		"a Prometheus Operator field misspelt": {broken("ServiceMonitor", func(o map[string]any) {
			_ = unstructured.SetNestedField(o, "metrics", "spec", "port")
		}), ".spec.port: field not declared in schema"},
		"a pod its namespace's Pod Security level refuses": {broken("Deployment", func(o map[string]any) {
			_ = unstructured.SetNestedField(o, true, "spec", "template", "spec", "hostNetwork")
		}), `violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true)`},
		"a deprecated node label": {broken("Deployment", func(o map[string]any) {
			_ = unstructured.SetNestedStringMap(o, map[string]string{"beta.kubernetes.io/arch": "amd64"}, "spec", "template", "spec", "nodeSelector")
		}), "warning: spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			problems, _ := sendRenders(t, map[string][]*unstructured.Unstructured{name: {tc.obj}})
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("want a problem saying %q, got %q", tc.want, problems)
			}
		})
	}
}

var (
	// templateTest is a template action that tests values: if, else if,
	// with or range.
	templateTest = regexp.MustCompile(`\{\{-?\s*(?:if|else if|with|range)\b[^}]*\}\}`)
	// valuesRef is a value a template reads, .Values.x.y or $.Values.x.y.
	valuesRef = regexp.MustCompile(`\$?\.Values\.([A-Za-z0-9_.]+)`)
	// valuesAlias is a variable set to a value: {{- $pc := .Values.prometheusClient }}.
	valuesAlias = regexp.MustCompile(`\$(\w+)\s*:=\s*\$?\.Values\.([A-Za-z0-9_.]+)\s*\}\}`)
	aliasRef    = regexp.MustCompile(`\$(\w+)\.([A-Za-z0-9_.]+)`)
)

// testedValues are the values the chart's templates test, each with the
// template that tests it.
func testedValues(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates in %s: %v", chartDir, err)
	}
	out := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		aliases := map[string]string{}
		for _, m := range valuesAlias.FindAllStringSubmatch(string(data), -1) {
			aliases[m[1]] = m[2]
		}
		for _, action := range templateTest.FindAllString(string(data), -1) {
			for _, m := range valuesRef.FindAllStringSubmatch(action, -1) {
				out[m[1]] = filepath.Base(f)
			}
			for _, m := range aliasRef.FindAllStringSubmatch(action, -1) {
				if v, ok := aliases[m[1]]; ok {
					out[v+"."+m[2]] = filepath.Base(f)
				}
			}
		}
	}
	return out
}

// TestHelmCasesCoverTheChart: helmCases sets every value a template tests
// away from its default (a boolean to the other value, anything else to
// something), and takes every choice of each enum in values.schema.json.
// A value a template starts to test, or a choice added to an enum, fails
// here until a case renders it.
func TestHelmCasesCoverTheChart(t *testing.T) {
	var defaults map[string]any
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &defaults); err != nil {
		t.Fatal(err)
	}
	// Every value set by some case, by its path (list indices and escaped
	// dots of map keys cut off at the first), with the values given.
	set := map[string][]string{}
	for _, c := range helmCases(installNamespaces{}) {
		for _, s := range slices.Concat(c.set, c.setJSON) {
			k, v, _ := strings.Cut(s, "=")
			for {
				set[k] = append(set[k], v)
				i := max(strings.LastIndex(k, "."), strings.LastIndex(k, "["))
				if i < 0 {
					break
				}
				k = k[:i]
			}
		}
	}
	tested := testedValues(t)
	if len(tested) < 20 {
		t.Fatalf("found only %d values the templates test: %v", len(tested), tested)
	}
	for path, tmpl := range tested {
		def, _, _ := unstructured.NestedFieldNoCopy(defaults, strings.Split(path, ".")...)
		got, ok := set[path]
		switch b := def.(type) {
		case bool:
			if !slices.Contains(got, fmt.Sprint(!b)) {
				t.Errorf("%s tests %s (default %t): no helm case sets it to %t", tmpl, path, b, !b)
			}
		default:
			if !ok {
				t.Errorf("%s tests %s: no helm case sets it", tmpl, path)
			}
		}
	}
	var schema map[string]any
	data, err = os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, node map[string]any)
	walk = func(path string, node map[string]any) {
		if enum, ok := node["enum"].([]any); ok {
			def, _, _ := unstructured.NestedFieldNoCopy(defaults, strings.Split(path, ".")...)
			for _, e := range enum {
				if e != def && !slices.Contains(set[path], fmt.Sprint(e)) {
					t.Errorf("values.schema.json: no helm case sets %s to %v", path, e)
				}
			}
		}
		props, _ := node["properties"].(map[string]any)
		for k, v := range props {
			if child, ok := v.(map[string]any); ok {
				walk(strings.TrimPrefix(path+"."+k, "."), child)
			}
		}
	}
	walk("", schema)
}
