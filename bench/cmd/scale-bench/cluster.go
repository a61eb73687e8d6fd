package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/manager"
)

// cluster is a real kube-apiserver and etcd (the binaries hack/ builds),
// on random ports, started by controller-runtime's envtest as the
// controller tier does. Nothing else of a cluster runs: no scheduler, no
// controller-manager, no kubelet but the simulated ones.
type cluster struct {
	env        *envtest.Environment
	cfg        *rest.Config
	cs         kubernetes.Interface
	c          client.Client
	wc         client.WithWatch
	dyn        dynamic.Interface
	kubeconfig string
}

// startCluster starts kube-apiserver and etcd with tailor's CRDs and
// extraCRDs (files or directories: VPA's, for its run).
func startCluster(repo, workDir string, extraCRDs ...string) (*cluster, error) {
	env := &envtest.Environment{
		CRDDirectoryPaths:     append([]string{filepath.Join(repo, "config", "crd", "bases")}, extraCRDs...),
		ErrorIfCRDPathMissing: true,
		// envtest's 20s default start timeout is too short on a loaded
		// 2-core machine (test/controller's main_test.go says when).
		ControlPlaneStartTimeout: 3 * time.Minute,
	}
	api := env.ControlPlane.GetAPIServer().Configure()
	// The manager and the simulated fleet are the apiserver's only
	// clients; the defaults (400/200) would throttle the setup, not tailor.
	api.Set("max-requests-inflight", "2000")
	api.Set("max-mutating-requests-inflight", "1000")
	// The metrics-server stand-in is reached at its endpoint: there is no
	// kube-proxy for a Service's cluster IP.
	api.Set("enable-aggregator-routing", "true")
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd (TEST_ASSET_KUBE_APISERVER, TEST_ASSET_ETCD; make bench-scale sets them): %w", err)
	}
	cl := &cluster{env: env}
	cfg.QPS, cfg.Burst = -1, 0 // the setup is not rate limited on the client
	cl.cfg = cfg
	scheme, err := manager.Scheme()
	if err != nil {
		return nil, err
	}
	if cl.wc, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	cl.c = cl.wc
	if cl.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if cl.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	// The manager's own identity, in group system:masters (this
	// apiserver's only authorizer is RBAC with that group bound).
	user, err := env.AddUser(envtest.User{Name: "tailor-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding the manager's user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	cl.kubeconfig = filepath.Join(workDir, "manager.kubeconfig")
	if err := os.WriteFile(cl.kubeconfig, kc, 0o600); err != nil {
		return nil, err
	}
	return cl, nil
}

func (c *cluster) stop() error { return c.env.Stop() }

// layout is where each pod goes: pod i belongs to workload i%policies and
// runs on node i%nodes, so a policy's pods are spread over as many nodes as
// they can be (the kubelet source's worst case: every policy reads many
// nodes).
type layout struct {
	size
	namespaces int
	// owned: each workload's pods are owned by a ReplicaSet of a
	// Deployment (VPA's run), not ownerless.
	owned bool
}

func (l layout) namespace(policy int) string { return fmt.Sprintf("bench-%03d", policy%l.namespaces) }
func (l layout) workload(policy int) string  { return fmt.Sprintf("w%04d", policy) }

// populate creates the namespaces, the nodes, the pods (bound, Running, with
// the status a kubelet posts) and one selector policy per workload.
func (c *cluster) populate(ctx context.Context, l layout, f *fleet, shapes []*shape) ([]*simPod, error) {
	for i := range l.namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%03d", i)}}
		if err := c.c.Create(ctx, ns); err != nil {
			return nil, fmt.Errorf("creating namespace: %w", err)
		}
	}
	err := parallel(ctx, l.Nodes, func(i int) error {
		n := f.nodes[i]
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"kubernetes.io/hostname": n.name}}}
		if err := c.c.Create(ctx, node); err != nil {
			return fmt.Errorf("creating node %s: %w", n.name, err)
		}
		alloc := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi"), corev1.ResourcePods: resource.MustParse("110"),
		}
		node.Status = corev1.NodeStatus{
			Capacity: alloc, Allocatable: alloc,
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: f.ip}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(n.port)}},
			Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", OperatingSystem: "linux", Architecture: "amd64"},
		}
		if err := c.c.Status().Update(ctx, node); err != nil {
			return fmt.Errorf("setting status of node %s: %w", n.name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var owners map[string]types.UID
	if l.owned {
		if owners, err = c.vpaOwners(ctx, l); err != nil {
			return nil, err
		}
	}
	pods := make([]*simPod, l.Pods)
	err = parallel(ctx, l.Pods, func(i int) error {
		pol := i % l.Policies
		node := f.nodes[i%l.Nodes]
		sp := &simPod{
			ns: l.namespace(pol), node: i % l.Nodes, name: fmt.Sprintf("%s-%05d", l.workload(pol), i),
			shape: shapes[i%len(shapes)], offset: (i * 37) % 288,
			cpuBase: 0.4, memBase: 360 * (1 << 20), cpuLimit: 1, upTo: benchStart,
		}
		pods[i] = sp
		if err := c.createPod(ctx, sp, l.workload(pol), node.name, owners[l.workload(pol)]); err != nil {
			return err
		}
		node.mu.Lock()
		node.pods = append(node.pods, sp)
		node.mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = parallel(ctx, l.Policies, func(i int) error {
		p := &v1alpha1.TailorPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace(i), Name: l.workload(i)},
			Spec: v1alpha1.TailorPolicySpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": l.workload(i)}},
				ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
					ContainerName: "*",
					MinAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					MaxAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
				}}},
				Behavior: &v1alpha1.Behavior{MaxConcurrentResizes: ptr.To[int32](5)},
			},
		}
		if err := c.c.Create(ctx, p); err != nil {
			return fmt.Errorf("creating policy %s/%s: %w", p.Namespace, p.Name, err)
		}
		return nil
	})
	return pods, err
}

// createPod creates a Burstable one-container pod bound to node and posts
// the status its kubelet would once it runs. Its requests are a quarter
// above its usage's peak (0.4 cores, 360Mi), about where tailor would size
// it, so a run measures a steady state rather than a first wave of raises:
// lowerings wait for the stabilization window (15m, longer than a run),
// raises come with the step.
func (c *cluster) createPod(ctx context.Context, sp *simPod, app, node string, owner types.UID) error {
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("480Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("960Mi")},
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: sp.ns, Name: sp.name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: res}},
		},
	}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-rs", UID: owner, Controller: ptr.To(true)}}
	}
	if err := c.c.Create(ctx, p); err != nil {
		return fmt.Errorf("creating pod %s/%s: %w", sp.ns, sp.name, err)
	}
	now := metav1.Now()
	yes := true
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, HostIP: "10.0.0.1", PodIP: "10.1.0.1", StartTime: &now,
		ObservedGeneration: p.Generation,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", Ready: true, Started: &yes, Image: "registry.k8s.io/pause:3.10", ImageID: "registry.k8s.io/pause:3.10",
			ContainerID: "containerd://" + string(p.UID), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			AllocatedResources: res.Requests.DeepCopy(), Resources: res.DeepCopy(),
		}},
	}
	if err := c.c.Status().Update(ctx, p); err != nil {
		return fmt.Errorf("setting status of pod %s/%s: %w", sp.ns, sp.name, err)
	}
	return nil
}

// parallel runs fn for 0..n-1 on 16 workers and returns the first error.
func parallel(ctx context.Context, n int, fn func(int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
