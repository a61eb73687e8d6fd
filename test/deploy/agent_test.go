package deploy

import (
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/internal/cli"
	"github.com/tailorhq/tailor/test/cluster"
)

// agentRender is an install with the node agent, typed.
type agentRender struct {
	// namespace is the managers'; agentNamespace the agent's.
	namespace, agentNamespace string
	agent                     *appsv1.DaemonSet
	// namespaces are the rendered Namespaces' labels, by name.
	namespaces map[string]map[string]string
	managers   []*appsv1.Deployment
	services   map[string]*corev1.Service
	accounts   map[string]bool
	roles      map[string]*rbacv1.Role
	bindings   []*rbacv1.RoleBinding
	// cluster holds the ClusterRoleBindings; clusterRoles their roles.
	cluster      []*rbacv1.ClusterRoleBinding
	clusterRoles map[string]*rbacv1.ClusterRole
}

func newAgentRender(t *testing.T, namespace, agentNamespace string, objs []*unstructured.Unstructured) agentRender {
	t.Helper()
	r := agentRender{namespace: namespace, agentNamespace: agentNamespace, namespaces: map[string]map[string]string{}, services: map[string]*corev1.Service{}, accounts: map[string]bool{},
		roles: map[string]*rbacv1.Role{}, clusterRoles: map[string]*rbacv1.ClusterRole{}}
	into := func(o *unstructured.Unstructured, typed any) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, typed, true); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "DaemonSet":
			if r.agent != nil {
				t.Fatalf("two DaemonSets rendered: %s and %s", r.agent.Name, o.GetName())
			}
			r.agent = &appsv1.DaemonSet{}
			into(o, r.agent)
		case "Deployment":
			d := &appsv1.Deployment{}
			into(o, d)
			r.managers = append(r.managers, d)
		case "Service":
			s := &corev1.Service{}
			into(o, s)
			r.services[s.Namespace+"/"+s.Name] = s
		case "ServiceAccount":
			r.accounts[o.GetNamespace()+"/"+o.GetName()] = true
		case "Namespace":
			r.namespaces[o.GetName()] = o.GetLabels()
		case "Role":
			role := &rbacv1.Role{}
			into(o, role)
			r.roles[role.Namespace+"/"+role.Name] = role
		case "RoleBinding":
			b := &rbacv1.RoleBinding{}
			into(o, b)
			r.bindings = append(r.bindings, b)
		case "ClusterRole":
			role := &rbacv1.ClusterRole{}
			into(o, role)
			r.clusterRoles[role.Name] = role
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			into(o, b)
			r.cluster = append(r.cluster, b)
		}
	}
	if r.agent == nil || len(r.managers) == 0 {
		t.Fatalf("want the agent DaemonSet and the manager Deployment, got %v and %d Deployments", r.agent, len(r.managers))
	}
	return r
}

// TestAgentRender renders the node agent both ways and checks what it may
// do on its node and in the cluster, and that it and the managers find each
// other: the agent's args and the manager's parse with tailor's own flags,
// the agent watches the Service in front of every manager's report port,
// and the manager accepts the agent's ServiceAccount, under the install's
// name prefix or release name.
func TestAgentRender(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-agent", "deploy-test-agent"
	const own = namespace + "-nodes"
	cases := map[string]struct {
		render         func(t *testing.T) []*unstructured.Unstructured
		agentNamespace string
		// privileged: the agent's namespace is rendered, enforcing the
		// privileged Pod Security level.
		privileged bool
		// provided: the reports' certificate is the operator's: the
		// managers only read its Secret.
		provided bool
	}{
		"kustomize": {render: func(t *testing.T) []*unstructured.Unstructured {
			return renderKustomizeAgent(t, namespace, own, release+"-")
		}, agentNamespace: own, privileged: true},
		"helm": {render: func(t *testing.T) []*unstructured.Unstructured {
			return renderHelm(t, release, namespace, "agent.enabled=true")
		}, agentNamespace: namespace},
		"helm own namespace": {render: func(t *testing.T) []*unstructured.Unstructured {
			return renderHelm(t, release, namespace, "agent.enabled=true", "agent.namespace="+own, "agent.createNamespace=true")
		}, agentNamespace: own, privileged: true},
		"helm own namespace, not created": {render: func(t *testing.T) []*unstructured.Unstructured {
			return renderHelm(t, release, namespace, "agent.enabled=true", "agent.namespace="+own)
		}, agentNamespace: own},
		"helm sharded": {render: func(t *testing.T) []*unstructured.Unstructured {
			return renderHelm(t, release, namespace, "agent.enabled=true", "shards=2")
		}, agentNamespace: namespace},
		"helm provided certificate": {render: func(t *testing.T) []*unstructured.Unstructured {
			return renderHelm(t, release, namespace, "agent.enabled=true", "agent.tls.provided=true", "agent.tls.secretName=agent-cert", "agent.tls.caConfigMap=agent-ca")
		}, agentNamespace: namespace, provided: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newAgentRender(t, namespace, tc.agentNamespace, tc.render(t))
			if want := release + "-tailor-agent"; r.agent.Name != want || r.agent.Namespace != tc.agentNamespace {
				t.Errorf("the agent DaemonSet is %s/%s, want %s/%s", r.agent.Namespace, r.agent.Name, tc.agentNamespace, want)
			}
			checkAgentNamespaces(t, r, tc.privileged)
			checkAgentPod(t, r.agent.Spec.Template.Spec)
			flags := checkAgentArgs(t, r)
			checkAgentAccess(t, r, flags)
			checkManagersTakeReports(t, r, flags, tc.provided)
		})
	}
}

// checkAgentNamespaces: only the agent's own namespace, if rendered,
// enforces the privileged Pod Security level; the managers' namespace is
// never relabelled privileged.
func checkAgentNamespaces(t *testing.T, r agentRender, privileged bool) {
	t.Helper()
	const enforce = "pod-security.kubernetes.io/enforce"
	for name, labels := range r.namespaces {
		if name != r.agentNamespace && labels[enforce] == "privileged" {
			t.Errorf("namespace %s, which the agent does not run in, enforces privileged", name)
		}
	}
	if got := r.namespaces[r.agentNamespace][enforce]; privileged && got != "privileged" {
		t.Errorf("the agent's namespace %s enforces %q, want privileged", r.agentNamespace, got)
	}
	if _, ok := r.namespaces[r.agentNamespace]; !privileged && ok && r.agentNamespace != r.namespace {
		t.Errorf("namespace %s is rendered without being asked for", r.agentNamespace)
	}
	if !privileged && r.namespaces[r.namespace][enforce] == "privileged" {
		t.Errorf("the managers' namespace %s is relabelled privileged", r.namespace)
	}
	if privileged && r.agentNamespace == r.namespace {
		t.Fatalf("bad case: the agent's own namespace is the managers'")
	}
}

// checkAgentPod: the agent reads the host's cgroups through a read-only
// hostPath and nothing else of the node's, as nobody, with no
// capabilities and no way to gain any, and holds a token minted only for
// the manager besides its API token.
func checkAgentPod(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	if spec.HostNetwork || spec.HostPID || spec.HostIPC || spec.HostUsers != nil {
		t.Errorf("the agent shares the host's namespaces: hostNetwork %t, hostPID %t, hostIPC %t, hostUsers %v",
			spec.HostNetwork, spec.HostPID, spec.HostIPC, spec.HostUsers)
	}
	if len(spec.InitContainers) > 0 || len(spec.EphemeralContainers) > 0 || len(spec.Containers) != 1 {
		t.Fatalf("the agent pod has %d containers and %d init containers: want its one container",
			len(spec.Containers), len(spec.InitContainers))
	}
	// The watch on the managers' EndpointSlices needs the API token.
	if spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken {
		t.Error("the agent pod mounts no API token: it cannot watch the managers' EndpointSlices")
	}
	wantPod := &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](65534),
		RunAsGroup:     ptr.To[int64](65534),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if diff := cmp.Diff(wantPod, spec.SecurityContext); diff != "" {
		t.Errorf("agent pod securityContext (-want,+got):\n%s", diff)
	}
	c := spec.Containers[0]
	wantContainer := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if diff := cmp.Diff(wantContainer, c.SecurityContext); diff != "" {
		t.Errorf("agent container securityContext (-want,+got):\n%s", diff)
	}
	wantVolumes := []corev1.Volume{
		{Name: "cgroup", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: "/sys/fs/cgroup", Type: ptr.To(corev1.HostPathDirectory)}}},
		{Name: "tailor-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: "tailor-manager", ExpirationSeconds: ptr.To[int64](3600), Path: "token"}}}}}},
	}
	if diff := cmp.Diff(wantVolumes, spec.Volumes); diff != "" {
		t.Errorf("agent volumes (-want,+got):\n%s", diff)
	}
	wantMounts := []corev1.VolumeMount{
		{Name: "cgroup", MountPath: "/host/sys/fs/cgroup", ReadOnly: true, RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyIfPossible)},
		{Name: "tailor-token", MountPath: "/var/run/secrets/tailor", ReadOnly: true},
	}
	if diff := cmp.Diff(wantMounts, c.VolumeMounts); diff != "" {
		t.Errorf("agent volume mounts (-want,+got):\n%s", diff)
	}
	for _, p := range c.Ports {
		if p.HostPort != 0 {
			t.Errorf("agent port %s takes host port %d", p.Name, p.HostPort)
		}
	}
	// Every node, whatever its taints.
	if !containsToleration(spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists}) {
		t.Errorf("agent tolerations %v do not tolerate every taint (operator Exists alone)", spec.Tolerations)
	}
	wantResources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	if diff := cmp.Diff(wantResources, c.Resources, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("agent resources (-want,+got):\n%s", diff)
	}
	if got := envValue(c, "GOMEMLIMIT"); got != "40MiB" {
		t.Errorf("agent GOMEMLIMIT = %q, want 40MiB (under the 64Mi limit)", got)
	}
}

func containsToleration(ts []corev1.Toleration, want corev1.Toleration) bool {
	for _, t := range ts {
		if cmp.Equal(t, want) {
			return true
		}
	}
	return false
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// checkAgentAccess: the agent's ServiceAccount may get, list and watch
// EndpointSlices in the managers' namespace, and the one ConfigMap its
// --manager-ca-configmap names, and nothing else; the manager's may create
// TokenReviews, to authenticate the agents.
func checkAgentAccess(t *testing.T, r agentRender, agent *pflag.FlagSet) {
	t.Helper()
	sa := r.agent.Spec.Template.Spec.ServiceAccountName
	if !r.accounts[r.agentNamespace+"/"+sa] {
		t.Fatalf("the agent runs as ServiceAccount %s/%s, which is not rendered", r.agentNamespace, sa)
	}
	for _, m := range r.managers {
		if m.Spec.Template.Spec.ServiceAccountName == sa {
			t.Fatalf("the agent and manager %s share ServiceAccount %s", m.Name, sa)
		}
	}
	isAgent := func(subjects []rbacv1.Subject) bool {
		for _, s := range subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == r.agentNamespace {
				return true
			}
		}
		return false
	}
	for _, b := range r.cluster {
		if isAgent(b.Subjects) {
			t.Errorf("ClusterRoleBinding %s grants the agent cluster-wide access", b.Name)
		}
	}
	var rules []rbacv1.PolicyRule
	for _, b := range r.bindings {
		if !isAgent(b.Subjects) {
			continue
		}
		if b.Namespace != r.namespace || b.RoleRef.Kind != "Role" {
			t.Errorf("RoleBinding %s/%s grants the agent %s %s: want a Role of namespace %s", b.Namespace, b.Name, b.RoleRef.Kind, b.RoleRef.Name, r.namespace)
			continue
		}
		role, ok := r.roles[b.Namespace+"/"+b.RoleRef.Name]
		if !ok {
			t.Errorf("RoleBinding %s refers to Role %s, which is not rendered", b.Name, b.RoleRef.Name)
			continue
		}
		rules = append(rules, role.Rules...)
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{agent.Lookup("manager-ca-configmap").Value.String()}, Verbs: []string{"get", "list", "watch"}},
	}
	if diff := cmp.Diff(want, rules); diff != "" {
		t.Errorf("what the agent may do in namespace %s (-want,+got):\n%s", r.namespace, diff)
	}

	reviews := false
	for _, b := range r.cluster {
		role := r.clusterRoles[b.RoleRef.Name]
		if role == nil {
			continue
		}
		for _, m := range r.managers {
			manager := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: m.Spec.Template.Spec.ServiceAccountName, Namespace: r.namespace}
			if len(b.Subjects) != 1 || b.Subjects[0] != manager {
				continue
			}
			for _, rule := range role.Rules {
				if cmp.Equal(rule, rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}}) {
					reviews = true
				}
			}
		}
	}
	if !reviews {
		t.Error("the manager may not create TokenReviews: it cannot authenticate the agents' reports")
	}
}

// checkAgentArgs parses the agent's args with tailor's own flags, after
// expanding $(VAR) from the container's environment as the kubelet does,
// and checks they point at the pod's mounts.
func checkAgentArgs(t *testing.T, r agentRender) *pflag.FlagSet {
	t.Helper()
	c := r.agent.Spec.Template.Spec.Containers[0]
	flags := parseVerb(t, "agent", expandArgs(t, c, r.agentNamespace))
	for flag, want := range map[string]string{
		"cgroup-root":               "/host/sys/fs/cgroup",
		"token-file":                "/var/run/secrets/tailor/token",
		"interval":                  "1s",
		"report-interval":           "5s",
		"manager-port-name":         "agent",
		"health-probe-bind-address": ":8081",
	} {
		if got := flags.Lookup(flag).Value.String(); got != want {
			t.Errorf("agent --%s = %s, want %s", flag, got, want)
		}
	}
	probe := c.LivenessProbe
	if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != "/healthz" ||
		!portIs(c, probe.HTTPGet.Port, portOf(t, flags.Lookup("health-probe-bind-address").Value.String())) {
		t.Errorf("agent liveness probe %v: want GET /healthz on --health-probe-bind-address", probe)
	}
	return flags
}

// checkManagersTakeReports: the Service the agents watch is rendered, in
// front of every manager's report port, and every manager reads the agents
// and accepts the agent's ServiceAccount; its certificate is for that
// Service, and it publishes its CA where the agent reads it, with a Role
// on those two objects alone (the Secret only read when provided).
func checkManagersTakeReports(t *testing.T, r agentRender, agent *pflag.FlagSet, provided bool) {
	t.Helper()
	svcName := agent.Lookup("manager-service").Value.String()
	if ns, _, _ := strings.Cut(svcName, "/"); ns != r.namespace {
		t.Errorf("agent --manager-service=%s: want a Service in namespace %s", svcName, r.namespace)
	}
	svc, ok := r.services[svcName]
	if !ok {
		t.Fatalf("agent --manager-service=%s: no such Service rendered", svcName)
	}
	var port *corev1.ServicePort
	for i, p := range svc.Spec.Ports {
		if p.Name == agent.Lookup("manager-port-name").Value.String() {
			port = &svc.Spec.Ports[i]
		}
	}
	if port == nil {
		t.Fatalf("Service %s has no port named %s (--manager-port-name)", svcName, agent.Lookup("manager-port-name").Value)
	}
	if len(svc.Spec.Selector) == 0 {
		t.Fatalf("Service %s selects no pods", svcName)
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	if sel.Matches(labels.Set(r.agent.Spec.Template.Labels)) {
		t.Errorf("Service %s selects the agents' own pods", svcName)
	}
	wantSA := r.agentNamespace + ":" + r.agent.Spec.Template.Spec.ServiceAccountName
	for _, m := range r.managers {
		if !sel.Matches(labels.Set(m.Spec.Template.Labels)) {
			t.Errorf("Service %s (selector %v) does not select the pods of %s (labels %v)", svcName, svc.Spec.Selector, m.Name, m.Spec.Template.Labels)
		}
		var c corev1.Container
		for _, x := range m.Spec.Template.Spec.Containers {
			if x.Name == "manager" {
				c = x
			}
		}
		flags := parseVerb(t, "manager", expandArgs(t, c, r.namespace))
		for flag, want := range map[string]string{"metrics-source": "agent", "agent-fallback": "kubelet", "agent-service-account": wantSA,
			// The certificate is made (or checked) for the Service the
			// agents dial, whose name they check; the CA is published
			// where they read it.
			"agent-service": svcName, "agent-ca-configmap": agent.Lookup("manager-ca-configmap").Value.String(),
			"agent-tls-provided": strconv.FormatBool(provided)} {
			if got := flags.Lookup(flag).Value.String(); got != want {
				t.Errorf("%s: --%s = %s, want %s", m.Name, flag, got, want)
			}
		}
		checkManagerTLSAccess(t, r, m, flags, provided)
		if !portIs(c, port.TargetPort, portOf(t, flags.Lookup("agent-bind-address").Value.String())) {
			t.Errorf("%s: Service %s port %s targets %s, not the manager's --agent-bind-address=%s",
				m.Name, svcName, port.Name, port.TargetPort.String(), flags.Lookup("agent-bind-address").Value)
		}
	}
}

// checkManagerTLSAccess: manager m's ServiceAccount is bound, in its own
// namespace, to exactly the rules on its TLS Secret and CA ConfigMap:
// get and update by name (get only on a provided Secret), and create.
func checkManagerTLSAccess(t *testing.T, r agentRender, m *appsv1.Deployment, flags *pflag.FlagSet, provided bool) {
	t.Helper()
	manager := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: m.Spec.Template.Spec.ServiceAccountName, Namespace: r.namespace}
	var got []rbacv1.PolicyRule
	for _, b := range r.bindings {
		if len(b.Subjects) != 1 || b.Subjects[0] != manager || b.RoleRef.Kind != "Role" {
			continue
		}
		role := r.roles[b.Namespace+"/"+b.RoleRef.Name]
		if role == nil || b.Namespace != r.namespace {
			continue
		}
		for _, rule := range role.Rules {
			if slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "configmaps") {
				got = append(got, rule)
			}
		}
	}
	secret, cm := flags.Lookup("agent-tls-secret").Value.String(), flags.Lookup("agent-ca-configmap").Value.String()
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, ResourceNames: []string{cm}, Resources: []string{"configmaps"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, ResourceNames: []string{secret}, Resources: []string{"secrets"}, Verbs: []string{"get", "update"}},
	}
	if provided {
		want[1].Resources = []string{"configmaps"}
		want[2].Verbs = []string{"get"}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: what the manager may do with Secrets and ConfigMaps in %s (-want,+got):\n%s", m.Name, r.namespace, diff)
	}
}

// parseVerb runs args, which start with a tailor verb, through that verb's
// flag parsing and returns its flags.
func parseVerb(t *testing.T, verb string, args []string) *pflag.FlagSet {
	t.Helper()
	root := cli.NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	cmd, rest, err := root.Find(args)
	if err != nil || cmd.Name() != verb {
		t.Fatalf("args %q find no %s command: %v", args, verb, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("tailor %s refuses the install's args %q: %v", verb, args, err)
	}
	if extra := cmd.Flags().Args(); len(extra) > 0 {
		t.Errorf("args tailor %s takes no flag for: %q", verb, extra)
	}
	return cmd.Flags()
}

var envReference = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandArgs expands $(VAR) in c's args from its env, as the kubelet does:
// plain values, and the pod's namespace through the downward API. A
// reference left unexpanded fails the test.
func expandArgs(t *testing.T, c corev1.Container, namespace string) []string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = namespace
		}
	}
	var out []string
	for _, a := range c.Args {
		a = envReference.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := env[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		})
		if envReference.MatchString(a) {
			t.Errorf("container %s arg %q refers to a variable its env does not define", c.Name, a)
		}
		out = append(out, a)
	}
	return out
}

// portOf is the port of a bind address such as ":8444".
func portOf(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("bind address %q: %v", addr, err)
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil || n == 0 {
		t.Fatalf("bind address %q has no port", addr)
	}
	return int32(n)
}

// portIs says whether ref (a port number or a container port's name) is
// port on container c.
func portIs(c corev1.Container, ref intstr.IntOrString, port int32) bool {
	if ref.Type == intstr.Int {
		return ref.IntVal == port
	}
	for _, p := range c.Ports {
		if p.Name == ref.StrVal {
			return p.ContainerPort == port
		}
	}
	return false
}

// TestHelmAgentFallback: with the agent, the chart grants and configures
// the source agent.fallback names, and not metricsSource's.
func TestHelmAgentFallback(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-agent", "deploy-test-agent"
	always := map[string]string{"ClusterRole agent-reviewer": "manager", "ClusterRole manager": "manager", "ClusterRole manager-writes": "manager",
		"ClusterRole replace-unschedulable": "manager", "Role agent": "agent", "Role leader-election": "manager",
		"Role manager-agent-tls": "manager", "ClusterRole metrics-reader": ""}
	with := func(role string) map[string]string {
		out := map[string]string{role: "manager"}
		for k, v := range always {
			out[k] = v
		}
		return out
	}
	cases := map[string]struct {
		set       []string
		wantRoles map[string]string
		// wantFlags are the manager's flags the install sets, "" for one it
		// must leave unset.
		wantFlags map[string]string
	}{
		"kubelet": {
			set:       []string{"agent.fallback=kubelet", "kubeletThrottling=false"},
			wantRoles: with("ClusterRole metrics-kubelet"),
			wantFlags: map[string]string{"agent-fallback": "kubelet", "kubelet-throttling": "false", "prometheus-url": ""},
		},
		"metrics-server": {
			set:       []string{"agent.fallback=metrics-server"},
			wantRoles: with("ClusterRole metrics-server"),
			wantFlags: map[string]string{"agent-fallback": "metrics-server", "kubelet-throttling": "", "prometheus-url": ""},
		},
		"prometheus": {
			set:       []string{"agent.fallback=prometheus", "prometheusURL=http://prom:9090"},
			wantRoles: always,
			wantFlags: map[string]string{"agent-fallback": "prometheus", "prometheus-url": "http://prom:9090", "kubelet-throttling": ""},
		},
		"none": {
			set:       []string{"agent.fallback=none"},
			wantRoles: always,
			wantFlags: map[string]string{"agent-fallback": "none", "kubelet-throttling": "", "prometheus-url": ""},
		},
		"metricsSource unused": {
			set:       []string{"metricsSource=prometheus"},
			wantRoles: with("ClusterRole metrics-kubelet"),
			wantFlags: map[string]string{"metrics-source": "agent", "agent-fallback": "kubelet", "prometheus-url": ""},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := renderHelm(t, release, namespace, append([]string{"agent.enabled=true"}, tc.set...)...)
			if diff := cmp.Diff(tc.wantRoles, boundTo(roles(t, objs, release+"-tailor-"))); diff != "" {
				t.Errorf("roles (-want,+got):\n%s", diff)
			}
			flags := parseVerb(t, "manager", managerArgs(t, objs))
			for flag, want := range tc.wantFlags {
				f := flags.Lookup(flag)
				if got := map[bool]string{true: f.Value.String()}[f.Changed]; got != want {
					t.Errorf("--%s = %q, want %q (\"\": not set)", flag, got, want)
				}
			}
		})
	}
}
