package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Agent is a node agent DaemonSet running on the local cluster, reporting
// to a manager in the test's process.
type Agent struct {
	Namespace string
	// ServiceAccount is the agents' identity for the manager's
	// AgentServiceAccount option.
	ServiceAccount string
	// Service is <namespace>/<name> of the Service the agents push to, for
	// the manager's AgentService option: the manager makes its certificate
	// for that Service's names and publishes its CA in the namespace, and
	// the agents check it against that CA, for that name.
	Service string
	cs      kubernetes.Interface
}

// DeployAgent installs the node agent as config/agent and
// config/components/agent render it (its ServiceAccount, Role and binding,
// and DaemonSet, logging at debug level) in namespace, and in place of the manager's Service a Service
// without a selector whose endpoint is this host at managerPort, where a
// manager in the test's process takes reports, over TLS: give that
// manager Agent.Service, and it makes its certificate for that Service and
// publishes its CA in namespace, where the agent reads it. It waits for the
// agent to run. Components are the agent's own kustomize components to add
// (config/components/agent-jvm-softmax: its JVM mode).
func DeployAgent(ctx context.Context, cs kubernetes.Interface, namespace string, managerPort int, components ...string) (*Agent, error) {
	objs, err := renderAgent(namespace, components)
	if err != nil {
		return nil, err
	}
	a := &Agent{Namespace: namespace, cs: cs}
	var ds *appsv1.DaemonSet
	var service string
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			if o.Name == "tailor-agent" {
				a.ServiceAccount = namespace + ":" + o.Name
				_, err = cs.CoreV1().ServiceAccounts(namespace).Create(ctx, o, metav1.CreateOptions{})
			}
		case *rbacv1.Role:
			_, err = cs.RbacV1().Roles(namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = cs.RbacV1().RoleBindings(namespace).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.DaemonSet:
			ds = o
		case *corev1.Service:
			if o.Spec.Selector["app.kubernetes.io/component"] == "manager" && len(o.Spec.Ports) == 1 && o.Spec.Ports[0].Name == "agent" {
				service = o.Name
			}
		}
		if err != nil {
			return nil, fmt.Errorf("creating the agent's %T: %w", o, err)
		}
	}
	if ds == nil || service == "" || a.ServiceAccount == "" {
		return nil, fmt.Errorf("config/agent and config/components/agent rendered no agent DaemonSet, ServiceAccount or manager Service for agents")
	}
	if err := pointAtHost(ctx, cs, namespace, service, managerPort); err != nil {
		return nil, err
	}
	a.Service = namespace + "/" + service
	// The dev cluster has no kube-proxy: the apiserver's Service address
	// is not routed, so the agent is pointed at the apiserver itself, as
	// client-go's in-cluster config reads it. Nothing else differs.
	host, port, err := APIServerEndpoint(ctx, cs)
	if err != nil {
		return nil, err
	}
	c := &ds.Spec.Template.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: host}, corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: port})
	c.ImagePullPolicy = corev1.PullNever
	// Debug logs: each urgent report and failed push, for a failed test.
	c.Args = append(c.Args, "--development")
	if _, err := cs.AppsV1().DaemonSets(namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the agent DaemonSet: %w", err)
	}
	return a, a.waitRunning(ctx, ds.Name)
}

// renderAgent builds config/default with the agent component (the managers'
// side: the Service for reports, the agent's Role and binding) and
// config/agent (the agent's ServiceAccount and DaemonSet) with components,
// both moved into namespace, and returns their objects, typed, each pointed
// at the other in that one namespace as docs/agent.md says.
func renderAgent(namespace string, components []string) ([]any, error) {
	_, this, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(this), "..", "..")
	var out []any
	for _, build := range []struct {
		resource   string
		components []string
	}{{"config/default", []string{"config/components/agent"}}, {"config/agent", components}} {
		objs, err := kustomizeInto(root, namespace, build.resource, build.components)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// kustomizeInto builds resource, with components, moved into namespace, and
// returns its ServiceAccounts, the agent's Role and RoleBinding, its
// DaemonSets and Services, typed.
func kustomizeInto(root, namespace, resource string, components []string) ([]any, error) {
	overlay, err := os.MkdirTemp("", "tailor-agent-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(overlay) }()
	rel := func(p string) string {
		r, _ := filepath.Rel(overlay, filepath.Join(root, p))
		return r
	}
	kust := map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": namespace,
		"resources": []string{rel(resource)},
	}
	if len(components) > 0 {
		var rels []string
		for _, c := range components {
			rels = append(rels, rel(c))
		}
		kust["components"] = rels
	}
	k, err := yaml.Marshal(kust)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), k, 0o644); err != nil {
		return nil, err
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), overlay)
	if err != nil {
		return nil, fmt.Errorf("kustomize build of %s with %q: %w", resource, components, err)
	}
	var out []any
	for _, r := range rm.Resources() {
		kind := r.GetKind()
		if kind != "ServiceAccount" && kind != "Role" && kind != "RoleBinding" && kind != "DaemonSet" && kind != "Service" {
			continue
		}
		raw, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding the rendered %s %s: %w", kind, r.GetName(), err)
		}
		switch o := obj.(type) {
		case *rbacv1.Role:
			// The agent's Role only: the manager's leader-election Role
			// is not needed by a manager in the test's process.
			if o.Name != "tailor-agent" {
				continue
			}
		case *rbacv1.RoleBinding:
			if o.Name != "tailor-agent" {
				continue
			}
			// The agent runs in namespace too, not in its own.
			for i := range o.Subjects {
				o.Subjects[i].Namespace = namespace
			}
		case *appsv1.DaemonSet:
			// Its managers' Service is in namespace too.
			for i := range o.Spec.Template.Spec.Containers {
				c := &o.Spec.Template.Spec.Containers[i]
				for j := range c.Env {
					if c.Env[j].Name == "MANAGER_NAMESPACE" {
						c.Env[j].Value = namespace
					}
				}
			}
		}
		out = append(out, obj)
	}
	return out, nil
}

// APIServerEndpoint is where the apiserver says pods reach it: the
// endpoints of the default/kubernetes Service, which kube-proxy would route
// the Service's cluster IP to.
func APIServerEndpoint(ctx context.Context, cs kubernetes.Interface) (string, string, error) {
	slices, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return "", "", err
	}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			for _, p := range s.Ports {
				if len(e.Addresses) > 0 && p.Port != nil {
					return e.Addresses[0], strconv.Itoa(int(*p.Port)), nil
				}
			}
		}
	}
	return "", "", fmt.Errorf("the kubernetes Service has no endpoint")
}

// pointAtHost makes service, with no selector, route to this host's node
// address at port: the agents push to its endpoints.
func pointAtHost(ctx context.Context, cs kubernetes.Interface, namespace, service string, port int) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the node: %w", err)
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("the cluster has no node")
	}
	var ip string
	for _, a := range nodes.Items[0].Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ip = a.Address
		}
	}
	if ip == "" {
		return fmt.Errorf("node %s has no InternalIP", nodes.Items[0].Name)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: service, Namespace: namespace},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "agent", Port: int32(port)}}},
	}
	if _, err := cs.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating service %s: %w", service, err)
	}
	eps := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: service + "-host", Namespace: namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: "tailor-tests",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("agent"), Port: ptr.To(int32(port))}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(namespace).Create(ctx, eps, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the endpoints of %s: %w", service, err)
	}
	return nil
}

func (a *Agent) waitRunning(ctx context.Context, name string) error {
	return wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := a.cs.AppsV1().DaemonSets(a.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return ds.Status.DesiredNumberScheduled > 0 && ds.Status.NumberReady == ds.Status.DesiredNumberScheduled, nil
	})
}

// Pod returns the agent's pod on the node.
func (a *Agent) Pod(ctx context.Context) (*corev1.Pod, error) {
	pods, err := a.cs.CoreV1().Pods(a.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=agent"})
	if err != nil {
		return nil, err
	}
	if len(pods.Items) != 1 {
		return nil, fmt.Errorf("%d agent pods, want 1", len(pods.Items))
	}
	return &pods.Items[0], nil
}

// Logs returns the last lines of the agent's log.
func (a *Agent) Logs(ctx context.Context, lines int64) (string, error) {
	pod, err := a.Pod(ctx)
	if err != nil {
		return "", err
	}
	b, err := a.cs.CoreV1().Pods(a.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{TailLines: &lines}).DoRaw(ctx)
	return string(b), err
}

// FreePort is a TCP port nothing listens on right now, on every address:
// for a manager in the test's process that the agents reach at the
// node's address.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Ramp grows the memory p's load generator holds from one size to
// another at perSecond bytes a second, in steps of a tenth of a second.
func Ramp(ctx context.Context, p *corev1.Pod, from, to, perSecond int64) error {
	step := perSecond / 10
	start := time.Now()
	for size := from + step; ; size += step {
		size = min(size, to)
		if err := Drive(ctx, p, "/memory?size="+strconv.FormatInt(size, 10)); err != nil {
			return err
		}
		if size == to {
			return nil
		}
		// Keep to the rate whatever each call took.
		next := start.Add(time.Duration(size-from) * time.Second / time.Duration(perSecond))
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
	}
}
