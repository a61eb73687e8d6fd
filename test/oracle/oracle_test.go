package oracle

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	resourcehelper "k8s.io/component-helpers/resource"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
	"github.com/tailorhq/tailor/test/cluster"
)

var (
	flagCases = flag.Int("oracle.cases", 2000, "number of random (pod, resize) cases to check against the apiserver")
	flagSeed  = flag.Uint64("oracle.seed", 1, "random seed; the same seed replays the same cases")
	flagPods  = flag.Int("oracle.pods", 60, "number of scheduling-gated pods the cases are spread over")
	flagNode  = flag.String("oracle.node", "", "node to bind the node-capacity pods to (default: the first node)")
	flagImage = flag.String("oracle.image", builder.DefaultImage, "image for the pods bound to the node; must already be on the node")
	flagBound = flag.Float64("oracle.bound-share", 0.15, "share of cases run against pods bound to the node (node-capacity admission)")
)

// TestOracle checks that the planner's accepted/refused verdict equals the
// real apiserver's for random resizes. Each patch is sent to the pod's resize
// subresource as a server-side dry run, so nothing is persisted and pods are
// reused across cases.
func TestOracle(t *testing.T) {
	cluster.Quiet(t)
	ctx, cs, server, ns := connect(t, 60*time.Minute)
	t.Logf("seed %d, %d cases", *flagSeed, *flagCases)

	g := gen{r: rand.New(rand.NewPCG(*flagSeed, 0x7a11))}
	gated := createGatedPods(ctx, t, cs, ns, g)
	node, bound := createBoundPods(ctx, t, cs, ns)

	t.Run("plan from a stale pod is rejected with 409 Conflict", func(t *testing.T) {
		pod, err := cs.CoreV1().Pods(ns).Get(ctx, gated[0], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stale := pod.DeepCopy()
		stale.ResourceVersion = "1" // any version but the current one
		plan, err := resize.Plan(resize.Input{Pod: stale, Server: server, Desired: resize.Desired{
			Containers: map[string]corev1.ResourceRequirements{"app": {Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("123m")}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.StrategicMergePatchType, plan.Patch,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "resize")
		if !apierrors.IsConflict(err) {
			t.Errorf("patch %s with resourceVersion 1 (current %s): got %v, want 409 Conflict", plan.Patch, pod.ResourceVersion, err)
		}
	})

	var compared, boundCompared, mismatches, noChange, accepted, conflicts int
	byRule := map[resize.Rule]int{}
	// Count only cases that reach the apiserver: no-change plans send nothing.
	for i := 0; compared < *flagCases; i++ {
		if i > 3**flagCases {
			t.Fatalf("generated %d cases but only %d changed anything; the generator is broken", i, compared)
		}
		var name string
		var ns2 *resize.NodeState
		if len(bound) > 0 && g.chance(*flagBound) {
			name = bound[g.r.IntN(len(bound))]
		} else {
			name = gated[g.r.IntN(len(gated))]
		}
		pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("case %d: get pod %s: %v", i, name, err)
		}
		var alloc corev1.ResourceList
		if pod.Spec.NodeName != "" {
			alloc = node.Status.Allocatable
			ns2 = &resize.NodeState{Allocatable: alloc, Labels: node.Labels, DeclaredFeatures: node.Status.DeclaredFeatures}
		}
		d := g.desired(pod, alloc)
		var plan *resize.Result
		// A kubelet may update a bound pod between our read and the patch; the
		// resourceVersion in the patch then makes the apiserver answer 409, so
		// read again and re-plan the same desired resources.
		for attempt := 0; ; attempt++ {
			plan, err = resize.Plan(resize.Input{Pod: pod, Desired: d, Node: ns2, Server: server})
			if err != nil {
				t.Fatalf("case %d: planner error on a generated case: %v", i, err)
			}
			if plan.NoChange {
				break
			}
			_, err = cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, plan.Patch,
				metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "resize")
			if !apierrors.IsConflict(err) || attempt == 5 {
				break
			}
			conflicts++
			if pod, err = cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Fatalf("case %d: get pod %s: %v", i, name, err)
			}
		}
		if plan.NoChange {
			noChange++
			continue
		}
		var serverAccepted bool
		switch {
		case err == nil:
			serverAccepted = true
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			serverAccepted = false
		default:
			t.Fatalf("case %d: resize of %s failed for a reason that is not a verdict: %v", i, name, err)
		}
		compared++
		if pod.Spec.NodeName != "" {
			boundCompared++
		}
		if serverAccepted {
			accepted++
		}
		byRule[plan.Rule]++
		if serverAccepted != (plan.Outcome == resize.Accepted) {
			mismatches++
			reportMismatch(t, i, pod, plan, err)
		}
	}
	t.Logf("oracle: %d cases compared with the apiserver (%d accepted, %d refused; %d on pods bound to node %s, the rest on scheduling-gated pods), %d no-change plans skipped, %d mismatches",
		compared, accepted, compared-accepted, boundCompared, nodeName(node), noChange, mismatches)
	t.Logf("oracle: verdicts by tailor rule: %v; stale-read conflicts retried: %d", byRule, conflicts)
	if mismatches > 0 {
		t.Fatalf("%d of %d cases: tailor's verdict differs from the apiserver's", mismatches, compared)
	}
	if compared == 0 {
		t.Fatal("no case was compared")
	}
}

// connect skips the test unless TAILOR_KUBECONFIG names a cluster, and
// returns a client for it, its version and a fresh namespace that is deleted
// when the test ends. ctx ends after timeout.
func connect(t *testing.T, timeout time.Duration) (context.Context, kubernetes.Interface, resize.Version, string) {
	t.Helper()
	var cfg *rest.Config
	switch kubeconfig := os.Getenv("TAILOR_KUBECONFIG"); {
	case kubeconfig != "":
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
			t.Fatalf("load kubeconfig %s: %v", kubeconfig, err)
		}
	case envtestConfig != nil:
		cfg = rest.CopyConfig(envtestConfig)
	default:
		t.Skip("the oracle needs a real apiserver: set TAILOR_KUBECONFIG to a cluster's, or TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD for envtest (make oracle)")
	}
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client for %s: %v", cfg.Host, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)

	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	server, err := resize.ParseVersion(info.GitVersion)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver %s (%s)", info.GitVersion, cfg.Host)

	ns := fmt.Sprintf("oracle-%d", time.Now().UnixNano()%1_000_000_000)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, cluster.NewNamespace(ns, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		grace := int64(0)
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})

	return ctx, cs, server, ns
}

func createGatedPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, g gen) []string {
	t.Helper()
	var names []string
	for i := 0; len(names) < *flagPods; i++ {
		pod := g.gatedPod(fmt.Sprintf("gated-%03d", i))
		pod.Namespace = ns
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			// The generator aims at valid pods; a refusal here is a generator bug worth seeing.
			t.Fatalf("create generated pod %s: %v\n%s", pod.Name, err, podSummary(pod))
		}
		names = append(names, pod.Name)
	}
	return names
}

// createBoundPods binds a few tiny pods to a real node so that resizes of
// them go through the PodResizeValidator admission plugin (node capacity).
func createBoundPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) (*corev1.Node, []string) {
	t.Helper()
	nodeName := *flagNode
	if nodeName == "" {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list nodes: %v", err)
		}
		if len(nodes.Items) == 0 {
			t.Log("no node: node-capacity cases skipped")
			return nil, nil
		}
		nodeName = nodes.Items[0].Name
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", nodeName, err)
	}
	ctr := func(n string) *builder.ContainerWrapper { return builder.Container(n).Image(*flagImage) }
	pods := []*corev1.Pod{
		builder.Pod("bound-guaranteed").Node(nodeName).TerminationGracePeriod(0).
			Container(ctr("app").Requests("10m", "16Mi").Limits("10m", "16Mi")).Obj(),
		builder.Pod("bound-burstable").Node(nodeName).TerminationGracePeriod(0).
			Container(ctr("app").Requests("10m", "16Mi").Limits("50m", "32Mi")).
			Sidecar(ctr("sidecar").Requests("5m", "8Mi")).Obj(),
		builder.Pod("bound-podlevel").Node(nodeName).TerminationGracePeriod(0).PodRequests("20m", "32Mi").PodLimits("100m", "64Mi").
			Container(ctr("app").Requests("10m", "16Mi")).Obj(),
		// The pause init container never exits, so this pod stays in Init:
		// its non-sidecar init container is resizable while it runs.
		builder.Pod("bound-init").Node(nodeName).TerminationGracePeriod(0).
			InitContainer(ctr("init").Requests("10m", "16Mi")).
			Container(ctr("app").Requests("10m", "16Mi").Limits("20m", "")).Obj(),
	}
	var names []string
	for _, p := range pods {
		p.Namespace = ns
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create bound pod %s: %v", p.Name, err)
		}
		names = append(names, p.Name)
	}
	// Wait until they run, so the status the planner sees is a kubelet's.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			// The init-container pod sits in its (never ending) init container.
			initRunning := p.Name == "bound-init" && len(p.Status.InitContainerStatuses) > 0 && p.Status.InitContainerStatuses[0].State.Running != nil
			if p.Status.Phase != corev1.PodRunning && !initRunning {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Logf("bound pods did not all reach Running (%v); node-capacity cases still run against them as they are", err)
	}
	return node, names
}

func reportMismatch(t *testing.T, i int, pod *corev1.Pod, plan *resize.Result, serverErr error) {
	t.Helper()
	server := "accepted"
	if serverErr != nil {
		var se apierrors.APIStatus
		if errors.As(serverErr, &se) {
			server = "refused: " + se.Status().Message
		} else {
			server = "refused: " + serverErr.Error()
		}
	}
	t.Errorf("case %d MISMATCH on pod %s\n--- pod (resources as the apiserver holds them)\n%s--- patch\n%s\n--- tailor: %s %s %s\n--- apiserver: %s",
		i, pod.Name, podSummary(pod), plan.Patch, plan.Outcome, plan.Rule, plan.Message, server)
}

// podSummary prints the parts of a pod the resize rules read.
func podSummary(pod *corev1.Pod) string {
	type ctr struct {
		Name          string                         `json:"name"`
		Kind          string                         `json:"kind"`
		Resources     corev1.ResourceRequirements    `json:"resources"`
		ResizePolicy  []corev1.ContainerResizePolicy `json:"resizePolicy,omitempty"`
		RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy,omitempty"`
	}
	s := struct {
		RestartPolicy corev1.RestartPolicy         `json:"restartPolicy"`
		NodeName      string                       `json:"nodeName,omitempty"`
		QOSClass      corev1.PodQOSClass           `json:"qosClass,omitempty"`
		PodLevel      *corev1.ResourceRequirements `json:"podLevel,omitempty"`
		Containers    []ctr                        `json:"containers"`
	}{RestartPolicy: pod.Spec.RestartPolicy, NodeName: pod.Spec.NodeName, QOSClass: pod.Status.QOSClass, PodLevel: pod.Spec.Resources}
	for _, c := range pod.Spec.InitContainers {
		s.Containers = append(s.Containers, ctr{c.Name, "init", c.Resources, c.ResizePolicy, c.RestartPolicy})
	}
	for _, c := range pod.Spec.Containers {
		s.Containers = append(s.Containers, ctr{c.Name, "container", c.Resources, c.ResizePolicy, nil})
	}
	b, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%+v", s)
	}
	return strings.TrimSpace(string(b)) + "\n"
}

func aggregateRequests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
}

func nodeName(n *corev1.Node) string {
	if n == nil {
		return "(none)"
	}
	return n.Name
}
