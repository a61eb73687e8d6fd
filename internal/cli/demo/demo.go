package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/cli/kube"
	"github.com/tailorhq/tailor/internal/cli/printing"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/metrics"
	"github.com/tailorhq/tailor/internal/metrics/kubelet"
)

// DemoOptions holds `tailor demo` flags.
type DemoOptions struct {
	configFlags *genericclioptions.ConfigFlags
	streams     genericiooptions.IOStreams

	Image    string
	Replicas int32
	Speed    float64
	Keep     bool
}

// demoPhase is one step of the load pattern.
type demoPhase struct {
	name        string
	cpu         int64 // millicores each pod burns
	memFrom     int64 // MiB held at the start of the phase
	memTo       int64 // MiB held at its end (a ramp)
	duration    time.Duration
	explanation string
}

var demoPhases = []demoPhase{
	{"idle", 50, 32, 32, 75 * time.Second, "light load: tailor learns the workload and, after the stabilization window, gives back what it does not use"},
	{"spike", 1000, 32, 32, 90 * time.Second, "CPU demand jumps to 1 core per pod: throttled at the limit, tailor raises it in place, step by step"},
	{"idle again", 50, 32, 32, 90 * time.Second, "demand drops: tailor waits for the stabilization window, then lowers"},
	{"memory growth", 50, 32, 360, 75 * time.Second, "memory climbs to 360Mi per pod: tailor raises the memory limit ahead of the usage, before any OOM kill"},
}

// NewCommand is `tailor demo`.
func NewCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &DemoOptions{configFlags: configFlags, streams: streams}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Drive a sample workload through idle, spike and memory growth while tailor resizes it in place",
		Long: `Creates a Deployment running the load generator and a TailorPolicy for it,
drives a load pattern (idle, CPU spike, idle, memory growth) and shows, live,
each pod's usage against its requests and limits and every resize as it
happens. A tailor manager must be running against the same cluster
(hack/demo.sh starts one). It ends by itself with a summary.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Speed <= 0 {
				return exit.Usagef("--speed must be positive")
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.Image, "image", "tailor.local/loadgen:dev", "load generator image")
	cmd.Flags().Int32Var(&o.Replicas, "replicas", 2, "pods in the sample Deployment")
	cmd.Flags().Float64Var(&o.Speed, "speed", 1, "divide every phase's duration by this")
	cmd.Flags().BoolVar(&o.Keep, "keep", true, "leave the workload and policy in place at the end")
	return cmd
}

// Run plays the demo.
func (o *DemoOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := kube.RESTConfig(o.configFlags)
	if err != nil {
		return err
	}
	scheme, err := manager.Scheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns, _, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return err
	}
	if ns == "default" {
		ns = "tailor-demo"
	}
	out := o.streams.Out
	start := time.Now()
	if err := o.setup(ctx, c, ns); err != nil {
		return err
	}
	if _, err := waitDemoPods(ctx, c, ns, int(o.Replicas)); err != nil {
		return err
	}
	// Where every pod started: the template, since tailor may have resized
	// a pod before the demo first looks at it.
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &dep); err != nil {
		return err
	}
	initial := dep.Spec.Template.Spec.Containers[0].Resources
	source := kubelet.New(kubelet.NewAPIServerProxy(cs.CoreV1().RESTClient()), kubelet.Options{Throttling: true})
	seenEvents := map[string]bool{}
	var resizes []string
	firstRaise := time.Duration(0)
	var spikeStart time.Time

	for _, ph := range demoPhases {
		d := time.Duration(float64(ph.duration) / o.Speed)
		fmt.Fprintf(out, "\n\033[1m== %s (%s): %s\033[0m\n", ph.name, d.Round(time.Second), ph.explanation)
		if ph.name == "spike" {
			spikeStart = time.Now()
		}
		phaseStart := time.Now()
		header := true
		for time.Since(phaseStart) < d {
			frac := float64(time.Since(phaseStart)) / float64(d)
			mem := ph.memFrom + int64(frac*float64(ph.memTo-ph.memFrom))
			pods, err := demoPods(ctx, c, ns)
			if err != nil {
				return err
			}
			for _, p := range pods {
				drive(ctx, p, ph.cpu, mem)
			}
			usage, _ := source.Usage(ctx, pods)
			printLive(out, pods, usage, time.Since(start), header)
			header = false
			for _, line := range newEvents(ctx, cs, ns, seenEvents) {
				fmt.Fprintf(out, "  \033[33m%s\033[0m\n", line)
				resizes = append(resizes, line)
				if !spikeStart.IsZero() && firstRaise == 0 && strings.Contains(line, "cpu request") && strings.Contains(line, "Resized") {
					firstRaise = time.Since(spikeStart)
				}
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(3 * time.Second):
			}
		}
	}

	pods, err := demoPods(ctx, c, ns)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n\033[1m== summary after %s\033[0m\n", time.Since(start).Round(time.Second))
	fmt.Fprintf(out, "  resizes made in place: %d\n", countResized(resizes))
	if firstRaise > 0 {
		fmt.Fprintf(out, "  first CPU raise %.0fs after the spike started\n", firstRaise.Seconds())
	}
	for _, p := range pods {
		st := p.Status.ContainerStatuses
		restarts, oom := int32(0), false
		if len(st) > 0 {
			restarts = st[0].RestartCount
			oom = st[0].LastTerminationState.Terminated != nil && st[0].LastTerminationState.Terminated.Reason == "OOMKilled"
		}
		b, a := initial, p.Spec.Containers[0].Resources
		fmt.Fprintf(out, "  %s: cpu %s -> %s, memory %s -> %s, restarts %d, OOM-killed %v, QoS %s\n", p.Name,
			printing.ReqLim(b, corev1.ResourceCPU), printing.ReqLim(a, corev1.ResourceCPU),
			printing.ReqLim(b, corev1.ResourceMemory), printing.ReqLim(a, corev1.ResourceMemory), restarts, oom, p.Status.QOSClass)
	}
	var pol v1alpha1.TailorPolicy
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &pol); err == nil && pol.Status.Recommendation != nil {
		for _, r := range pol.Status.Recommendation.ContainerRecommendations {
			fmt.Fprintf(out, "  policy web recommends for %s: cpu %s, memory %s\n", r.ContainerName, printing.Qty(r.Target, corev1.ResourceCPU), printing.Qty(r.Target, corev1.ResourceMemory))
		}
	}
	if !o.Keep {
		_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	return nil
}

func (o *DemoOptions) setup(ctx context.Context, c client.Client, ns string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	zero := int64(0)
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &o.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &zero,
					AutomountServiceAccountToken:  new(bool),
					Containers: []corev1.Container{{
						Name: "app", Image: o.Image, Args: []string{"--cpu=50m", "--memory=32Mi"},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
						},
						ResizePolicy: []corev1.ContainerResizePolicy{
							{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
							{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
						},
					}},
				},
			},
		},
	}
	if err := c.Create(ctx, dep); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating deployment %s/web: %w", ns, err)
	}
	policy := &v1alpha1.TailorPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.TailorPolicySpec{
			TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			ResourcePolicy: &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{
				ContainerName: "*",
				MinAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				MaxAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Recommender:   &v1alpha1.RecommenderOverrides{CPUWindow: &metav1.Duration{Duration: time.Minute}},
			}}},
			Behavior: &v1alpha1.Behavior{
				MinResizeInterval:    &metav1.Duration{Duration: 5 * time.Second},
				MaxConcurrentResizes: ptrInt32(2),
				ScaleDown:            &v1alpha1.ScaleDownRules{StabilizationWindow: &metav1.Duration{Duration: 30 * time.Second}},
			},
		},
	}
	if err := c.Create(ctx, policy); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating TailorPolicy %s/web (is the CRD installed?): %w", ns, err)
	}
	fmt.Fprintf(o.streams.Out, "deployment %s/web (%d pods of %s, cpu 100m/200m, memory 64Mi/128Mi) and TailorPolicy %s/web created\n", ns, o.Replicas, o.Image, ns)
	return nil
}

func ptrInt32(v int32) *int32 { return &v }

func demoPods(ctx context.Context, c client.Client, ns string) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app": "web"}); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func waitDemoPods(ctx context.Context, c client.Client, ns string, n int) ([]*corev1.Pod, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods, err := demoPods(ctx, c, ns)
		if err != nil {
			return nil, err
		}
		ready := 0
		for _, p := range pods {
			if len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].Ready {
				ready++
			}
		}
		if ready >= n {
			return pods, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %d of %d demo pods ready after 2m", ready, n)
		}
		time.Sleep(time.Second)
	}
}

// drive sets a pod's load through the load generator's HTTP API.
func drive(ctx context.Context, p *corev1.Pod, cpu, memMi int64) {
	if p.Status.PodIP == "" {
		return
	}
	for _, path := range []string{fmt.Sprintf("/cpu?millicores=%d", cpu), fmt.Sprintf("/memory?size=%dMi", memMi)} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Status.PodIP+":8080"+path, nil)
		if err != nil {
			continue
		}
		ctx2, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx2))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		cancel()
	}
}

func printLive(out io.Writer, pods []*corev1.Pod, usage metrics.Result, elapsed time.Duration, header bool) {
	if header {
		fmt.Fprintf(out, "  %5s  %-22s %9s %-14s %9s %-14s %8s\n", "t", "pod", "cpu used", "req/lim", "mem used", "req/lim", "restarts")
	}
	for _, p := range pods {
		if len(p.Spec.Containers) == 0 {
			continue
		}
		c := p.Spec.Containers[0]
		u, ok := usage.Usage[metrics.Key{Namespace: p.Namespace, Pod: p.Name, Container: c.Name}]
		cpu, mem := "-", "-"
		if ok {
			cpu = fmt.Sprintf("%dm", int64(u.CPU*1000))
			mem = fmt.Sprintf("%dMi", int64(u.Memory)>>20)
		}
		restarts := int32(0)
		if len(p.Status.ContainerStatuses) > 0 {
			restarts = p.Status.ContainerStatuses[0].RestartCount
		}
		fmt.Fprintf(out, "  %4.0fs  %-22s %9s %-14s %9s %-14s %8d\n", elapsed.Seconds(), p.Name,
			cpu, printing.ReqLim(c.Resources, corev1.ResourceCPU), mem, printing.ReqLim(c.Resources, corev1.ResourceMemory), restarts)
	}
}

// newEvents returns tailor's events in ns not printed yet, oldest first.
func newEvents(ctx context.Context, cs kubernetes.Interface, ns string, seen map[string]bool) []string {
	list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool { return eventTime(&items[i]).Before(eventTime(&items[j])) })
	var out []string
	for _, e := range items {
		if e.ReportingController != "tailor" || seen[string(e.UID)+e.ResourceVersion] {
			continue
		}
		seen[string(e.UID)+e.ResourceVersion] = true
		out = append(out, fmt.Sprintf("%s %s: %s", e.Reason, e.Regarding.Name, e.Note))
	}
	return out
}

func eventTime(e *eventsv1.Event) time.Time {
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	if e.DeprecatedLastTimestamp.After(e.DeprecatedFirstTimestamp.Time) {
		return e.DeprecatedLastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func countResized(lines []string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "Resized ") {
			n++
		}
	}
	return n
}
