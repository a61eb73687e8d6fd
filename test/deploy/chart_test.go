package deploy

import (
	"github.com/tailorhq/tailor/test/cluster"

	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The Prometheus Operator's kinds, as a server that serves them lists them.
var monitoringAPIs = []string{"monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PodMonitor", "monitoring.coreos.com/v1/PrometheusRule"}

// everyOption turns on every optional object of the chart.
var everyOption = []string{"replicaCount=2", "agent.enabled=true", "agent.namespace=deploy-chart-nodes", "agent.createNamespace=true",
	"agent.priorityClassName=system-node-critical", "evictions.enabled=true", "dashboard.enabled=true",
	"monitoring.serviceMonitor.enabled=true", "monitoring.podMonitor.enabled=true", "monitoring.prometheusRule.enabled=true",
	"monitoring.grafanaDashboard.enabled=true", "networkPolicy.enabled=true",
	"networkPolicy.dashboardFrom[0].namespaceSelector.matchLabels.team=ops"}

// kinds counts the rendered objects by kind.
func kinds(objs []*unstructured.Unstructured) map[string]int {
	out := map[string]int{}
	for _, o := range objs {
		out[o.GetKind()]++
	}
	return out
}

// TestHelmOptions renders each optional object of the chart with its
// option off (the default) and on, and where it depends on an API the
// server serves, with and without that API.
func TestHelmOptions(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-chart", "deploy-test-chart"
	optional := []string{"PodDisruptionBudget", "ServiceMonitor", "PodMonitor", "PrometheusRule", "ConfigMap", "NetworkPolicy",
		"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "Namespace"}
	all := append([]string{mutatingAdmissionPolicy, validatingAdmissionPolicy}, monitoringAPIs...)
	cases := map[string]struct {
		apiVersions []string
		set         []string
		want        map[string]int
	}{
		"default, admission policy served": {apiVersions: all, want: map[string]int{"MutatingAdmissionPolicy": 1, "MutatingAdmissionPolicyBinding": 1,
			"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1}},
		// The guard is rendered where it is served, whatever the values.
		"the guard alone served": {apiVersions: []string{validatingAdmissionPolicy}, set: []string{"admission.enabled=false"},
			want: map[string]int{"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1}},
		"default, no admission policy served": {},
		"every option": {apiVersions: all, set: everyOption, want: map[string]int{"PodDisruptionBudget": 1, "ServiceMonitor": 1,
			"PodMonitor": 1, "PrometheusRule": 1, "ConfigMap": 1, "NetworkPolicy": 2, "MutatingAdmissionPolicy": 2,
			"MutatingAdmissionPolicyBinding": 2, "ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1, "Namespace": 1}},
		// On a server without MutatingAdmissionPolicy or the Prometheus
		// Operator, their objects are left out, whatever the values.
		"every option, nothing optional served": {set: everyOption, want: map[string]int{"PodDisruptionBudget": 1, "ConfigMap": 1,
			"NetworkPolicy": 2, "Namespace": 1}},
		"monitoring assumed served": {set: []string{"monitoring.assumeServed=true", "monitoring.serviceMonitor.enabled=true",
			"monitoring.prometheusRule.enabled=true"}, want: map[string]int{"ServiceMonitor": 1, "PrometheusRule": 1}},
		"monitoring served, not enabled": {apiVersions: monitoringAPIs},
		// The agents' PodMonitor scrapes nothing without agents.
		"podMonitor without the agent": {apiVersions: monitoringAPIs, set: []string{"monitoring.podMonitor.enabled=true"}},
		"one replica: no budget":       {set: []string{"podDisruptionBudget.enabled=true", "replicaCount=1"}},
		"budget off":                   {set: []string{"replicaCount=2", "podDisruptionBudget.enabled=false"}},
		"a budget per shard":           {set: []string{"replicaCount=3", "shards=3"}, want: map[string]int{"PodDisruptionBudget": 3}},
		"network policy, no agent":     {set: []string{"networkPolicy.enabled=true"}, want: map[string]int{"NetworkPolicy": 1}},
		"agent namespace not created":  {set: []string{"agent.enabled=true", "agent.namespace=deploy-chart-nodes"}},
		"agent namespace is the release's": {set: []string{"agent.enabled=true", "agent.namespace=" + namespace,
			"agent.createNamespace=true"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := kinds(renderHelmFor(t, tc.apiVersions, release, namespace, tc.set...))
			for k := range got {
				if !slices.Contains(optional, k) {
					delete(got, k)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("optional objects (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestHelmOptionsContent checks what the optional objects say: the budget
// selects the managers of its shard, the monitors and the network policies
// name the ports the pods serve, the agent gets its priority class, and
// the dashboard's ConfigMap has the sidecar's label.
func TestHelmOptionsContent(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-chart", "deploy-test-chart"
	objs := renderHelmFor(t, append([]string{mutatingAdmissionPolicy}, monitoringAPIs...), release, namespace, everyOption...)
	byKind := map[string][]*unstructured.Unstructured{}
	for _, o := range objs {
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
	}
	str := func(o *unstructured.Unstructured, path ...string) string {
		v, _, _ := unstructured.NestedString(o.Object, path...)
		return v
	}
	manager := byKind["Deployment"][0]
	agent := byKind["DaemonSet"][0]
	podLabels, _, _ := unstructured.NestedStringMap(manager.Object, "spec", "template", "metadata", "labels")
	agentLabels, _, _ := unstructured.NestedStringMap(agent.Object, "spec", "template", "metadata", "labels")
	matches := func(sel map[string]string, labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}

	pdb := byKind["PodDisruptionBudget"][0]
	sel, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
	if !matches(sel, podLabels) || matches(sel, agentLabels) {
		t.Errorf("PodDisruptionBudget selects %v: want the managers' pods (%v) only", sel, podLabels)
	}
	if v, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable"); fmt.Sprint(v) != "1" {
		t.Errorf("PodDisruptionBudget maxUnavailable = %v, want 1", v)
	}

	sm := byKind["ServiceMonitor"][0]
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" || eps[0].(map[string]any)["honorLabels"] != true {
		t.Errorf("ServiceMonitor endpoints %v: want port metrics with honorLabels", eps)
	}
	pm := byKind["PodMonitor"][0]
	if pm.GetNamespace() != "deploy-chart-nodes" {
		t.Errorf("PodMonitor in namespace %s, want the agent's, deploy-chart-nodes", pm.GetNamespace())
	}
	pmSel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	if !matches(pmSel, agentLabels) {
		t.Errorf("PodMonitor selects %v, not the agent pods (%v)", pmSel, agentLabels)
	}

	if got := str(agent, "spec", "template", "spec", "priorityClassName"); got != "system-node-critical" {
		t.Errorf("agent priorityClassName = %q, want system-node-critical", got)
	}

	cm := byKind["ConfigMap"][0]
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v lack grafana_dashboard: \"1\"", cm.GetLabels())
	}
	if err := json.Unmarshal([]byte(str(cm, "data", "tailor.json")), new(map[string]any)); err != nil {
		t.Errorf("dashboard ConfigMap's tailor.json: %v", err)
	}

	// Each NetworkPolicy admits, per port, only the peers it should.
	type rule struct{ Port, From string }
	policies := map[string][]rule{}
	for _, np := range byKind["NetworkPolicy"] {
		sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
		who := map[bool]string{true: "manager", false: "agent"}[matches(sel, podLabels)]
		if who == "agent" && !matches(sel, agentLabels) {
			t.Errorf("NetworkPolicy %s selects %v: neither the managers nor the agents", np.GetName(), sel)
		}
		ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
		for _, in := range ingress {
			m := in.(map[string]any)
			from, _ := json.Marshal(m["from"])
			for _, p := range m["ports"].([]any) {
				policies[who] = append(policies[who], rule{Port: fmt.Sprint(p.(map[string]any)["port"]), From: string(from)})
			}
		}
	}
	monitoring := `[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}},"podSelector":{}}]`
	want := map[string][]rule{
		"manager": {{"metrics", monitoring}, {"dashboard", `[{"namespaceSelector":{"matchLabels":{"team":"ops"}}}]`},
			{"agent", `[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"deploy-chart-nodes"}},"podSelector":{"matchLabels":{"app.kubernetes.io/component":"agent","app.kubernetes.io/instance":"deploy-test-chart","app.kubernetes.io/name":"tailor"}}}]`}},
		"agent": {{"metrics", monitoring}},
	}
	if diff := cmp.Diff(want, policies); diff != "" {
		t.Errorf("NetworkPolicy ingress by port (-want,+got):\n%s", diff)
	}
	// Every port a policy admits is one the pods serve.
	for who, rules := range policies {
		o := map[string]*unstructured.Unstructured{"manager": manager, "agent": agent}[who]
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		ports, _ := containers[0].(map[string]any)["ports"].([]any)
		var names []string
		for _, p := range ports {
			names = append(names, fmt.Sprint(p.(map[string]any)["name"]))
		}
		for _, r := range rules {
			if !slices.Contains(names, r.Port) {
				t.Errorf("the %s NetworkPolicy admits port %s, which its pods (%v) do not serve", who, r.Port, names)
			}
		}
	}
}

// notesRenderer renders the chart's NOTES.txt for a server that serves
// apiVersions, with --set values: helm template prints no notes, and helm
// install --dry-run asks a cluster, so NOTES.txt is rendered as a template
// of a copy of the chart.
func notesRenderer(t *testing.T) func(apiVersions []string, set ...string) string {
	t.Helper()
	chart := t.TempDir()
	if err := os.CopyFS(chart, os.DirFS(filepath.Join(repoRoot(t), "deploy/helm/tailor"))); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(chart, "templates/NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(chart, "templates/NOTES.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(chart, "templates/_notes.tpl"), []byte(`{{- define "test.notes" -}}`+string(text)+`{{- end }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(chart, "templates/notes.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: {{ include \"test.notes\" . | quote }}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(apiVersions []string, set ...string) string {
		t.Helper()
		args := []string{"template", "notes", chart, "--namespace", "deploy-notes", "--show-only", "templates/notes.yaml"}
		for _, v := range apiVersions {
			args = append(args, "--api-versions", v)
		}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		out, err := exec.Command(helm(t), args...).Output()
		if err != nil {
			t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
		}
		objs := decode(t, out)
		n, _, _ := unstructured.NestedString(objs[0].Object, "data", "notes")
		return n
	}
}

// TestHelmNotes: without MutatingAdmissionPolicy, or ValidatingAdmissionPolicy,
// the install's notes say plainly what the cluster gets; with them they do
// not.
func TestHelmNotes(t *testing.T) {
	cluster.Offline(t)
	notes := notesRenderer(t)
	without := notes(nil, "evictions.enabled=true")
	for _, want := range []string{"does not serve MutatingAdmissionPolicy", "not sized at admission", "no startup\nboost is applied at admission",
		"no recreate admission"} {
		if !strings.Contains(without, want) {
			t.Errorf("notes without MutatingAdmissionPolicy lack %q:\n%s", want, without)
		}
	}
	if with := notes([]string{mutatingAdmissionPolicy, validatingAdmissionPolicy}); strings.Contains(with, "does not serve") {
		t.Errorf("notes with MutatingAdmissionPolicy and ValidatingAdmissionPolicy served say one is not:\n%s", with)
	}
	// Without the guard, what the managers may then delete: every pod
	// where they write, when an admission policy sizes pods; nothing to
	// lose when none does.
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{nil, "nothing but\nthe managers' own code keeps them from deleting any pod of the cluster"},
		{[]string{"watchNamespaces={team-a,team-b}"}, "deleting any pod in team-a, team-b"},
		{[]string{"admission.enabled=false"}, "the managers are granted no delete on pods"},
	} {
		n := notes([]string{mutatingAdmissionPolicy}, tc.set...)
		if !strings.Contains(n, "does not serve ValidatingAdmissionPolicy") || !strings.Contains(n, tc.want) {
			t.Errorf("notes without ValidatingAdmissionPolicy, with %q, lack %q:\n%s", tc.set, tc.want, n)
		}
	}
	if n := notes([]string{mutatingAdmissionPolicy, validatingAdmissionPolicy}, "watchNamespaces={team-a,team-b}", "evictions.enabled=true"); !strings.Contains(n,
		"resizes, the deletes\nthat replace pods tailor sized, evictions) only in team-a, team-b") {
		t.Errorf("notes with watchNamespaces do not say where the managers write:\n%s", n)
	}
	if n := notes(nil, "monitoring.serviceMonitor.enabled=true"); !strings.Contains(n, "does not serve monitoring.coreos.com/v1 ServiceMonitor") {
		t.Errorf("notes with a ServiceMonitor asked for and not served do not say so:\n%s", n)
	}
	// A certificate the operator provides: the notes say which Secret, for
	// which name, and what happens until it is there.
	if n := notes(nil, "agent.enabled=true", "agent.tls.provided=true", "agent.tls.secretName=agent-cert"); !strings.Contains(n, "Secret agent-cert") ||
		!strings.Contains(n, "notes-tailor-manager-agents.deploy-notes.svc") {
		t.Errorf("notes with agent.tls.provided do not name the Secret and the name it must be for:\n%s", n)
	}
	if n := notes(nil, "agent.enabled=true"); strings.Contains(n, "yours to provide") {
		t.Errorf("notes without agent.tls.provided ask for a Secret:\n%s", n)
	}
}

// TestHelmSchemaRefuses: values.schema.json refuses values the chart
// cannot work with, at helm template and helm lint, naming the value.
func TestHelmSchemaRefuses(t *testing.T) {
	cluster.Offline(t)
	cases := map[string]struct{ set, wantErr string }{
		"duration":                 {"syncPeriod=banana", "/syncPeriod"},
		"rate window":              {"prometheusRateWindow=60", "/prometheusRateWindow"},
		"agent duration":           {"agent.interval=1", "/agent/interval"},
		"lease duration":           {"leaderElection.leaseDuration=8", "/leaderElection/leaseDuration"},
		"alert duration":           {"monitoring.prometheusRule.managerDownFor=soon", "/monitoring/prometheusRule/managerDownFor"},
		"metrics source":           {"metricsSource=influx", "/metricsSource"},
		"agent fallback":           {"agent.fallback=kubelets", "/agent/fallback"},
		"kubelet read via":         {"kubelet.readVia=ssh", "/kubelet/readVia"},
		"agent TLS Secret":         {"agent.tls.secretName=Agent_Cert", "/agent/tls/secretName"},
		"pull policy":              {"image.pullPolicy=Sometimes", "/image/pullPolicy"},
		"shards":                   {"shards=0", "/shards"},
		"replicas":                 {"replicaCount=0", "/replicaCount"},
		"port":                     {"dashboard.port=70000", "/dashboard/port"},
		"boolean":                  {"admission.enabled=maybe", "/admission/enabled"},
		"quantity":                 {"resources.limits.memory=lots", "/resources/limits/memory"},
		"unknown value":            {"syncperiod=10s", "syncperiod"},
		"unknown nested value":     {"agent.priorityclassName=x", "priorityclassName"},
		"namespace name":           {"agent.namespace=Tailor_Agent", "/agent/namespace"},
		"prometheus URL":           {"prometheusURL=prometheus:9090", "/prometheusURL"},
		"disruption budget":        {"podDisruptionBudget.maxUnavailable=0", "/podDisruptionBudget/maxUnavailable"},
		"network policy selector":  {"networkPolicy.metrics.namespaceSelector.matchLabel.a=b", "matchLabel"},
		"watch namespaces entries": {"watchNamespaces={Team-A}", "/watchNamespaces/0"},
		// An empty entry would pass --namespaces= (or a trailing comma),
		// and scope the admission bindings to no namespace at all.
		"watch namespace empty":       {"watchNamespaces[0]=", "/watchNamespaces/0"},
		"watch namespace trailing":    {"watchNamespaces={team-a,}", "/watchNamespaces/1"},
		"watch namespace twice":       {"watchNamespaces={team-a,team-a}", "/watchNamespaces"},
		"concurrent syncs":            {"concurrentSyncs=0", "/concurrentSyncs"},
		"api qps":                     {"kubeAPI.qps=0", "/kubeAPI/qps"},
		"api burst":                   {"kubeAPI.burst=0", "/kubeAPI/burst"},
		"too many shards":             {"shards=65", "/shards"},
		"history points":              {"dashboard.historyPoints=0", "/dashboard/historyPoints"},
		"a negative price":            {"dashboard.prices.cpuCoreHour=-0.01", "/dashboard/prices/cpuCoreHour"},
		"a price not a number":        {"dashboard.prices.memoryGiBHour=cheap", "/dashboard/prices/memoryGiBHour"},
		"metrics port":                {"metrics.service.port=0", "/metrics/service/port"},
		"service account name":        {"serviceAccount.name=Tailor_SA", "/serviceAccount/name"},
		"priority class name":         {"priorityClassName=High_Priority", "/priorityClassName"},
		"grafana namespace":           {"monitoring.grafanaDashboard.namespace=Grafana", "/monitoring/grafanaDashboard/namespace"},
		"alert job with a quote":      {`monitoring.prometheusRule.managerJob=a"b`, "/monitoring/prometheusRule/managerJob"},
		"pull secret without a name":  {"imagePullSecrets[0].nam=regcred", "/imagePullSecrets/0"},
		"monitor labels not a string": {"monitoring.serviceMonitor.labels.release=1", "/monitoring/serviceMonitor/labels/release"},
	}
	chart := filepath.Join(repoRoot(t), "deploy/helm/tailor")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, stderr, err := helmTemplate(t, nil, "schema", "deploy-schema", tc.set)
			if err == nil || !strings.Contains(stderr, "schema") || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("helm template --set %s: err %v, stderr %q: want a schema error naming %s", tc.set, err, stderr, tc.wantErr)
			}
			out, err := exec.Command(helm(t), "lint", "--strict", chart, "--set", tc.set).CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.wantErr) {
				t.Errorf("helm lint --set %s: err %v: want it refused naming %s\n%s", tc.set, err, tc.wantErr, out)
			}
		})
	}
	// And takes what values.yaml documents.
	for _, set := range []string{"syncPeriod=1m30s", "agent.interval=500ms", "podDisruptionBudget.maxUnavailable=50%",
		"resources.limits.memory=1Gi", "resources.requests.cpu=0.5", "agent.fallback=none", "watchNamespaces={team-a,team-b}", "prometheusRateWindow=1m30s",
		"dashboard.prices.cpuCoreHour=0.031", "dashboard.prices.memoryGiBHour=0"} {
		if _, stderr, err := helmTemplate(t, nil, "schema", "deploy-schema", set); err != nil {
			t.Errorf("helm template --set %s: %v\n%s", set, err, stderr)
		}
	}
}

// TestHelmRefusesCombinations: values each valid alone that the chart
// cannot render together are refused by helm template, saying what to
// change (the Prometheus client's are TestHelmPrometheusClientRefused's).
func TestHelmRefusesCombinations(t *testing.T) {
	cluster.Offline(t)
	cases := map[string]struct {
		apiVersions []string
		set         []string
		wantErr     string
	}{
		"replicas without leader election": {set: []string{"replicaCount=2", "leaderElection.enabled=false"},
			wantErr: "replicaCount > 1 needs leaderElection.enabled"},
		"a metrics certificate over plain HTTP": {set: []string{"metrics.secure=false", "metrics.certSecret=tailor-metrics-cert"},
			wantErr: "metrics.certSecret needs metrics.secure"},
		"one price alone": {set: []string{"dashboard.enabled=true", "dashboard.prices.cpuCoreHour=0.031"},
			wantErr: "dashboard.prices: set both cpuCoreHour and memoryGiBHour"},
		"a ServiceMonitor without the metrics Service": {apiVersions: monitoringAPIs,
			set:     []string{"monitoring.serviceMonitor.enabled=true", "metrics.service.enabled=false"},
			wantErr: "monitoring.serviceMonitor.enabled needs metrics.service.enabled"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, stderr, err := helmTemplate(t, tc.apiVersions, "combo", "deploy-combo", tc.set...)
			if err == nil || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("helm template --set %q: err %v, stderr %q: want it refused with %q", tc.set, err, stderr, tc.wantErr)
			}
		})
	}
}

// TestAdmissionScopedToWatchNamespaces: a release scoped to its tenant's
// namespaces (watchNamespaces) binds both admission policies to those
// namespaces only; an unscoped release binds them everywhere. So does
// config/samples/tenant, the kustomize install of one tenant, whose
// bindings name the namespaces its manager's --namespaces does.
// test/controller's TestAdmissionOnlyInWatchedNamespaces installs both on
// an apiserver and admits pods through them.
func TestAdmissionScopedToWatchNamespaces(t *testing.T) {
	cluster.Offline(t)
	scopes := func(objs []*unstructured.Unstructured) map[string]any {
		out := map[string]any{}
		for _, o := range objs {
			if o.GetKind() == "MutatingAdmissionPolicyBinding" {
				m, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "matchResources")
				out[o.GetName()] = m
			}
		}
		return out
	}
	in := func(namespaces ...any) map[string]any {
		return map[string]any{"namespaceSelector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}}}}
	}
	const release, namespace = "deploy-test-tenant", "deploy-tenant"
	for name, tc := range map[string]struct {
		objs []*unstructured.Unstructured
		want map[string]any
	}{
		"helm, every namespace": {renderHelm(t, release, namespace, "evictions.enabled=true"),
			map[string]any{release + "-tailor-admission": nil, release + "-tailor-recreate": nil}},
		"helm watchNamespaces": {renderHelm(t, release, namespace, "watchNamespaces={team-a,team-b}", "evictions.enabled=true"),
			map[string]any{release + "-tailor-admission": in("team-a", "team-b"), release + "-tailor-recreate": in("team-a", "team-b")}},
		"helm watchNamespaces, sharded": {renderHelm(t, release, namespace, "watchNamespaces={team-a,team-b,team-c}", "shards=2"),
			map[string]any{release + "-tailor-admission": in("team-a", "team-b", "team-c")}},
		"kustomize config/samples/tenant": {kustomizeTenantSample(t), map[string]any{"team-a-tailor-admission": in("team-a", "team-b")}},
	} {
		if diff := cmp.Diff(tc.want, scopes(tc.objs)); diff != "" {
			t.Errorf("%s: the admission bindings' matchResources (-want,+got):\n%s", name, diff)
		}
	}
	// The sample's manager syncs the namespaces its bindings admit.
	for _, o := range kustomizeTenantSample(t) {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		if !slices.Contains(args, "--namespaces=team-a,team-b") {
			t.Errorf("config/samples/tenant's manager runs with %q, want --namespaces=team-a,team-b, the namespaces its bindings admit", args)
		}
	}
}

// kustomizeTenantSample builds config/samples/tenant.
func kustomizeTenantSample(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot(t), "config/samples/tenant"))
	if err != nil {
		t.Fatalf("kustomize build config/samples/tenant: %v", err)
	}
	out, err := rm.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

// TestHelmLintStrict lints the chart with every option on.
func TestHelmLintStrict(t *testing.T) {
	cluster.Offline(t)
	args := []string{"lint", "--strict", filepath.Join(repoRoot(t), "deploy/helm/tailor"), "--set", "monitoring.assumeServed=true"}
	for _, s := range everyOption {
		args = append(args, "--set", s)
	}
	if out, err := exec.Command(helm(t), args...).CombinedOutput(); err != nil {
		t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// exportedMetrics are the names of the Prometheus metrics tailor's code
// registers (Name: "tailor_..."), found in its Go sources.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`Name:\s*"(tailor_[a-z0-9_]+)"`)
	out := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(repoRoot(t), "internal"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllSubmatch(data, -1) {
			out[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no tailor_ metric found in internal/")
	}
	return out
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promRange    = regexp.MustCompile(`\[[0-9smhdwy:]+\]`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}
)

// promQLMetrics checks that expr is well formed as far as this test can
// tell without a PromQL parser (github.com/prometheus/prometheus is not a
// dependency): quotes closed, brackets balanced and nested, label matchers
// of the form name op "value", durations in ranges; and returns the metric
// names it selects.
func promQLMetrics(expr string) ([]string, error) {
	if strings.Count(expr, `"`)%2 != 0 {
		return nil, fmt.Errorf("unclosed string")
	}
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	for _, r := range promString.ReplaceAllString(expr, `""`) {
		switch r {
		case '(', '[', '{':
			stack = append(stack, r)
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return nil, fmt.Errorf("unbalanced %q", r)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("unclosed %q", stack[len(stack)-1])
	}
	matcher := regexp.MustCompile(`^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"\s*$`)
	for _, m := range promMatchers.FindAllString(expr, -1) {
		inner := strings.TrimSpace(m[1 : len(m)-1])
		if inner == "" {
			continue
		}
		for _, part := range strings.Split(inner, ",") {
			if !matcher.MatchString(part) {
				return nil, fmt.Errorf("label matcher %q", part)
			}
		}
	}
	rest := promMatchers.ReplaceAllString(expr, " ")
	rest = promString.ReplaceAllString(rest, " ")
	rest = promGrouping.ReplaceAllString(rest, " ")
	if strings.Contains(promRange.ReplaceAllString(rest, " "), "[") {
		return nil, fmt.Errorf("a range that is not a duration")
	}
	rest = promRange.ReplaceAllString(rest, " ")
	var names []string
	for _, m := range promIdent.FindAllString(rest, -1) {
		if strings.HasSuffix(m, "(") || promKeywords[m] {
			continue // a function or aggregation, or a keyword
		}
		names = append(names, m)
	}
	return names, nil
}

// checkMetric: name is one tailor exports (a histogram's _bucket, _sum
// and _count series included), or up, which Prometheus writes for every
// target.
func checkMetric(exported map[string]bool, name string) bool {
	if name == "up" || exported[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] {
			return true
		}
	}
	return false
}

// TestPrometheusRuleExpressions: every alert's expression is well formed
// and queries only metrics tailor exports.
func TestPrometheusRuleExpressions(t *testing.T) {
	cluster.Offline(t)
	exported := exportedMetrics(t)
	objs := renderHelmFor(t, monitoringAPIs, "deploy-test-rules", "deploy-rules", "monitoring.prometheusRule.enabled=true",
		"agent.enabled=true", "evictions.enabled=true")
	var alerts []string
	for _, o := range objs {
		if o.GetKind() != "PrometheusRule" {
			continue
		}
		groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
		for _, g := range groups {
			rules, _ := g.(map[string]any)["rules"].([]any)
			for _, r := range rules {
				rule := r.(map[string]any)
				alert, _ := rule["alert"].(string)
				expr, _ := rule["expr"].(string)
				alerts = append(alerts, alert)
				names, err := promQLMetrics(expr)
				if err != nil {
					t.Errorf("alert %s: expression %q: %v", alert, expr, err)
				}
				if len(names) == 0 {
					t.Errorf("alert %s: expression %q queries no metric", alert, expr)
				}
				for _, n := range names {
					if !checkMetric(exported, n) {
						t.Errorf("alert %s queries %s, which tailor does not export", alert, n)
					}
				}
				if sev, _, _ := unstructured.NestedString(rule, "labels", "severity"); sev == "" {
					t.Errorf("alert %s has no severity", alert)
				}
			}
		}
	}
	sort.Strings(alerts)
	want := []string{"TailorAgentReportsMissing", "TailorAgentReportsRefused", "TailorCheckpointWritesFailing", "TailorEvictionsBlocked",
		"TailorManagerDown", "TailorMetricsUnavailable", "TailorPolicyNotSynced", "TailorResizesFailing"}
	if diff := cmp.Diff(want, alerts); diff != "" {
		t.Errorf("alerts (-want,+got):\n%s", diff)
	}
	// The checker itself refuses what it should.
	for _, bad := range []string{`rate(tailor_resizes_total[5m]`, `tailor_resizes_total{result=ok}`, `sum(x{a="b"]`, `rate(x[banana])`} {
		if _, err := promQLMetrics(bad); err == nil {
			t.Errorf("promQLMetrics(%q) takes a malformed expression", bad)
		}
	}
}

// TestGrafanaDashboard: the dashboard is JSON Grafana can load, and each of
// its queries is well formed and of metrics tailor exports.
func TestGrafanaDashboard(t *testing.T) {
	cluster.Offline(t)
	exported := exportedMetrics(t)
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy/helm/tailor/files/grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title      string
		UID        string
		Templating struct {
			List []struct {
				Name       string
				Definition string
			}
		}
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("files/grafana-dashboard.json: %v", err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard has title %q, uid %q and %d panels", dash.Title, dash.UID, len(dash.Panels))
	}
	queries := map[string]string{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for i, q := range p.Targets {
			queries[fmt.Sprintf("panel %q query %d", p.Title, i)] = q.Expr
		}
	}
	for _, v := range dash.Templating.List {
		if def, ok := strings.CutPrefix(v.Definition, "label_values("); ok {
			metric, _, _ := strings.Cut(def, ",")
			queries["variable "+v.Name] = metric
		}
	}
	used := map[string]bool{}
	for where, expr := range queries {
		// Grafana's variables stand for label values.
		names, err := promQLMetrics(strings.ReplaceAll(expr, "$job", "job"))
		if err != nil {
			t.Errorf("%s %q: %v", where, expr, err)
		}
		for _, n := range names {
			used[n] = true
			if !checkMetric(exported, n) {
				t.Errorf("%s queries %s, which tailor does not export", where, n)
			}
		}
	}
	for _, m := range []string{"tailor_policy_syncs_total", "tailor_resizes_total", "tailor_agent_reports_total"} {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}

// TestValuesDocumented: docs/install.md's table of chart values lists every
// value of values.yaml, and nothing values.yaml lacks. A row may name a
// map (agent.resources, podSecurityContext) for everything under it; a name
// starting with "." continues the row's previous name's parent
// (`leaderElection.leaseDuration`, `.renewDeadline`).
func TestValuesDocumented(t *testing.T) {
	cluster.Offline(t)
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "deploy/helm/tailor/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/install.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	code := regexp.MustCompile("`([^`]+)`")
	inTable := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| value |") {
			inTable = true
			continue
		}
		if inTable && !strings.HasPrefix(line, "|") {
			break
		}
		if !inTable || strings.HasPrefix(line, "|---") {
			continue
		}
		first := strings.Split(line, "|")[1]
		parent := ""
		for _, m := range code.FindAllStringSubmatch(first, -1) {
			name := m[1]
			if strings.HasPrefix(name, ".") {
				name = parent + name
			}
			listed[name] = true
			if i := strings.LastIndex(name, "."); i >= 0 {
				parent = name[:i]
			} else {
				parent = ""
			}
		}
	}
	if len(listed) == 0 {
		t.Fatal("docs/install.md has no table of values (a header row starting with \"| value |\")")
	}
	var missing []string
	known := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		known[prefix] = true
		m, ok := v.(map[string]any)
		if listed[prefix] || !ok || len(m) == 0 {
			if !listed[prefix] {
				missing = append(missing, prefix)
			}
			return
		}
		for k, child := range m {
			walk(strings.TrimPrefix(prefix+"."+k, "."), child)
		}
	}
	for k, v := range values {
		walk(k, v)
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("values in values.yaml that docs/install.md's table does not list: %q", missing)
	}
	var stale []string
	for name := range listed {
		if !known[name] {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/install.md's table lists values that values.yaml lacks: %q", stale)
	}
}
