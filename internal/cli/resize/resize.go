package resize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/cli/kube"
	"github.com/tailorhq/tailor/internal/cli/printing"
	"github.com/tailorhq/tailor/internal/resize"
)

// ResizeOptions holds `tailor resize` flags and state.
type ResizeOptions struct {
	configFlags *genericclioptions.ConfigFlags
	streams     genericiooptions.IOStreams

	Pod       string
	Container string
	Requests  string
	Limits    string
	PodLevel  bool
	DryRun    string
	Wait      bool
	Timeout   time.Duration
	Output    string
	// AllowPreemption sends a resize the scheduler is known to preempt
	// pods for.
	AllowPreemption bool

	requests, limits corev1.ResourceList
	clients          *kube.Clients
	now              func() time.Time
}

// NewCommand is `tailor resize`.
func NewCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ResizeOptions{configFlags: configFlags, streams: streams, now: time.Now}
	cmd := &cobra.Command{
		Use:   "resize POD [-c CONTAINER] [--requests cpu=..,memory=..] [--limits cpu=..,memory=..]",
		Short: "Resize one pod in place, after a preflight that predicts what Kubernetes will do",
		Long: `Resize a running pod's CPU and memory in place through the pods/resize
subresource. Before sending anything, tailor predicts the outcome the way the
apiserver and the kubelet will judge it: refused (naming the rule: the resize
rules, the namespace's LimitRanges and ResourceQuotas, the node's capacity),
deferred for lack of room on the node, or accepted, with which containers
restart and the QoS class before and after. It then applies the resize and follows it until
the kubelet reports it done, or says why not.

Quantities mean what they mean to kubectl: cpu=0.5 is 500m, memory=1G is 10^9
bytes, memory=1Gi is 2^30. Entries you do not name keep their current value.

Where the kubelet would defer the resize and the scheduler preempts for
resizes (Kubernetes 1.37+, feature gate
InPlacePodVerticalScalingSchedulerPreemption), tailor says which pods of
lower priority the scheduler would evict, and does not send the resize
unless --allow-preemption is given.

Exit status: 0 accepted (and done, with --wait); 2 bad usage; 3 Kubernetes
refuses (or would refuse) the resize, or tailor did not send it because the
scheduler would preempt pods for it; 4 accepted but not completed by the
kubelet (Infeasible, Error, or still pending at --timeout); 1 anything else.`,
		Example: `  # Raise the cpu limit of the only container to 3 cores
  tailor resize web-0 --limits cpu=3

  # Predict only, as JSON, without sending anything
  tailor resize web-0 -c app --requests memory=1Gi --limits memory=2Gi --dry-run=client -o json

  # Resize a sidecar, and ask the apiserver too (server-side dry run)
  tailor resize web-0 -c proxy --requests cpu=200m --dry-run=server

  # Pod-level resources (Kubernetes 1.35+ with the feature gates on)
  tailor resize web-0 --pod-level --limits cpu=2`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return exit.Usagef("resize takes exactly one pod name, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Container, "container", "c", "", "container to resize (regular, sidecar or init); required when the pod has more than one")
	f.StringVar(&o.Requests, "requests", "", "requests to set, e.g. cpu=500m,memory=1Gi")
	f.StringVar(&o.Limits, "limits", "", "limits to set, e.g. cpu=1,memory=2Gi")
	f.BoolVar(&o.PodLevel, "pod-level", false, "set the pod-level spec.resources instead of a container's")
	f.StringVar(&o.DryRun, "dry-run", "none", `"none" applies; "client" only predicts; "server" also submits a server-side dry run and compares`)
	f.Lookup("dry-run").NoOptDefVal = "client"
	f.BoolVar(&o.Wait, "wait", true, "after applying, follow the resize until the kubelet finishes or refuses it")
	f.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "how long --wait follows the resize")
	f.StringVarP(&o.Output, "output", "o", "", "output format: json or yaml (default: human-readable)")
	f.BoolVar(&o.AllowPreemption, "allow-preemption", false, "send a resize the kubelet would defer even where the scheduler would preempt pods of lower priority for it (Kubernetes 1.37+, feature gate InPlacePodVerticalScalingSchedulerPreemption); without it such a resize is not sent")
	return cmd
}

// Complete parses arguments and connects to the cluster.
func (o *ResizeOptions) Complete(args []string) error {
	o.Pod = args[0]
	var err error
	if o.requests, err = parseResourceList("--requests", o.Requests); err != nil {
		return err
	}
	if o.limits, err = parseResourceList("--limits", o.Limits); err != nil {
		return err
	}
	return nil
}

// Validate checks the flags before anything is sent.
func (o *ResizeOptions) Validate() error {
	if len(o.requests) == 0 && len(o.limits) == 0 {
		return exit.Usagef("nothing to resize: give --requests and/or --limits, e.g. --limits cpu=2")
	}
	if o.PodLevel && o.Container != "" {
		return exit.Usagef("--pod-level and -c are exclusive: pod-level resources belong to no container")
	}
	switch o.DryRun {
	case "none", "client", "server":
	default:
		return exit.Usagef(`invalid --dry-run %q: use "none", "client" or "server"`, o.DryRun)
	}
	switch o.Output {
	case "", "json", "yaml":
	default:
		return exit.Usagef("invalid -o %q: use json or yaml", o.Output)
	}
	if o.Timeout <= 0 {
		return exit.Usagef("--timeout must be positive, got %s", o.Timeout)
	}
	return nil
}

// parseResourceList parses "cpu=500m,memory=1Gi" as kubectl set resources does.
func parseResourceList(flag, s string) (corev1.ResourceList, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := corev1.ResourceList{}
	given := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || name == "" || value == "" {
			return nil, exit.Usagef("%s: %q is not NAME=QUANTITY (e.g. cpu=500m)", flag, kv)
		}
		// The pods/resize subresource changes cpu and memory only
		// (ValidatePodResize); anything else would be refused, or is a typo.
		switch corev1.ResourceName(name) {
		case corev1.ResourceCPU, corev1.ResourceMemory:
		case corev1.ResourceEphemeralStorage:
			return nil, exit.Usagef("%s: %s cannot be resized in place: Kubernetes resizes only cpu and memory", flag, name)
		default:
			if strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) || strings.Contains(name, "/") {
				return nil, exit.Usagef("%s: %s cannot be resized in place: Kubernetes resizes only cpu and memory", flag, name)
			}
			return nil, exit.Usagef("%s: unknown resource %q: use cpu or memory (e.g. cpu=500m,memory=1Gi)", flag, name)
		}
		if prev, ok := given[name]; ok {
			return nil, exit.Usagef("%s: %s is given twice (%s=%s and %s=%s): give it once", flag, name, name, prev, name, value)
		}
		given[name] = value
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, exit.Usagef("%s: %s=%q is not a quantity (try 500m, 0.5, 1Gi or 1G)", flag, name, value)
		}
		if q.Sign() < 0 {
			return nil, exit.Usagef("%s: %s=%s must not be negative", flag, name, value)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// Run plans, prints the preflight, and applies unless this is a dry run.
func (o *ResizeOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.clients == nil {
		c, err := kube.NewClients(o.configFlags)
		if err != nil {
			return err
		}
		o.clients = c
	}
	c := o.clients
	server, err := actuator.Discover(c.Discovery)
	if err != nil {
		return err
	}

	pod := &corev1.Pod{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: o.Pod}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("pod %q not found in namespace %q", o.Pod, c.Namespace)
		}
		return kube.ExplainAPIError(err, "get", "pods", c.Namespace)
	}
	desired, err := o.desired(pod)
	if err != nil {
		return err
	}
	node, nodeObj, warning := o.nodeState(ctx, pod)
	rules, missed := kube.ReadNamespaceRules(ctx, c.Client, pod.Namespace)
	plan, err := resize.Plan(resize.Input{Pod: pod, Desired: desired, Node: node, Server: server.Version, Rules: rules})
	if err != nil {
		return exit.WithCode(exit.Usage, err)
	}
	report := newPreflightReport(pod, plan, server)
	if warning != "" {
		report.Warnings = append(report.Warnings, warning)
	}
	if plan.Outcome == resize.Accepted && plan.Predicted == resize.Deferred && node != nil {
		var unread []string
		report.Preemption, unread = o.preemptionOf(ctx, server, nodeObj, node, plan)
		report.Warnings = append(report.Warnings, unread...)
	}
	for _, m := range missed {
		report.Warnings = append(report.Warnings, fmt.Sprintf("%s not checked: cannot list %s in namespace %s: %v", m.What, m.What, pod.Namespace, m.Err))
	}

	act := &actuator.Actuator{Client: c.Client, Server: server}
	// A server dry run is asked even when tailor predicts a refusal: its
	// point is to compare the two verdicts.
	if o.DryRun == "server" && !plan.NoChange {
		_, err := act.Apply(ctx, pod, plan.Patch, actuator.ApplyOptions{DryRun: true})
		var refusal *actuator.Refusal
		if err != nil && !errors.As(err, &refusal) {
			return err
		}
		report.ServerDryRun = serverVerdict(err)
		if perr := o.print(report); perr != nil {
			return perr
		}
		if err != nil {
			return refusalExit(err)
		}
		if plan.Outcome == resize.Refused {
			return exit.WithCode(exit.Refused, fmt.Errorf("tailor predicted a refusal (rule %s) but the apiserver accepted the dry run", plan.Rule))
		}
		return nil
	}
	if plan.Outcome == resize.Refused || plan.NoChange || o.DryRun == "client" {
		if err := o.print(report); err != nil {
			return err
		}
		if plan.Outcome == resize.Refused {
			return exit.WithCode(exit.Refused, fmt.Errorf("refused: Kubernetes would not accept this resize (rule %s)", plan.Rule))
		}
		return nil
	}

	if report.Preemption.preempts() && !o.AllowPreemption {
		if err := o.print(report); err != nil {
			return err
		}
		return exit.WithCode(exit.Refused, fmt.Errorf("not sent: the scheduler would preempt %d pod(s) of lower priority for this resize; pass --allow-preemption to send it anyway", len(report.Preemption.Victims)))
	}
	if o.Output == "" {
		if err := o.print(report); err != nil {
			return err
		}
	}
	start := o.now()
	applied, err := act.Apply(ctx, pod, plan.Patch, actuator.ApplyOptions{})
	if err != nil {
		report.Result = &ResizeResult{State: "Refused", Message: err.Error()}
		if o.Output != "" {
			_ = o.print(report)
		}
		return refusalExit(err)
	}
	if !o.Wait {
		report.Result = &ResizeResult{State: string(actuator.StateProposed), Message: "sent; not waiting (--wait=false)"}
		if o.Output != "" {
			return o.print(report)
		}
		_, err := fmt.Fprintf(o.streams.Out, "resize sent (pod generation %d); follow it with: tailor status %s -n %s\n", applied.Generation, pod.Name, pod.Namespace)
		return err
	}

	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	final, obs, ferr := act.Follow(wctx, applied, func(_ *corev1.Pod, obs actuator.Observation) {
		if o.Output == "" {
			fmt.Fprintf(o.streams.ErrOut, "  %6.2fs  %s %s\n", o.now().Sub(start).Seconds(), obs.State, obs.Message)
		}
	})
	report.Result = resultOf(pod, final, obs, o.now().Sub(start), plan)
	if ferr != nil && !errors.Is(ferr, context.DeadlineExceeded) {
		return ferr
	}
	if err := o.print(report); err != nil {
		return err
	}
	if obs.State != actuator.StateDone {
		return exit.WithCode(exit.Incomplete, fmt.Errorf("resize not completed: %s %s", obs.State, obs.Message))
	}
	return nil
}

// desired turns the flags into the planner's Desired for pod.
func (o *ResizeOptions) desired(pod *corev1.Pod) (resize.Desired, error) {
	rr := corev1.ResourceRequirements{Requests: o.requests, Limits: o.limits}
	if o.PodLevel {
		return resize.Desired{Pod: &rr}, nil
	}
	name := o.Container
	if name == "" {
		// As kubectl does, the default-container annotation names the default.
		name = pod.Annotations[defaultContainerAnnotation]
	}
	if name == "" {
		if names := containerNames(pod); len(names) != 1 {
			return resize.Desired{}, exit.Usagef("pod %s has containers %s: choose one with -c", pod.Name, strings.Join(names, ", "))
		}
		name = pod.Spec.Containers[0].Name
	}
	if !slices.Contains(containerNames(pod), name) {
		return resize.Desired{}, exit.Usagef("pod %s has no container %q (it has %s)", pod.Name, name, strings.Join(containerNames(pod), ", "))
	}
	return resize.Desired{Containers: map[string]corev1.ResourceRequirements{name: rr}}, nil
}

const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

func containerNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// nodeState reads the pod's node and its pods for the headroom check. A
// caller without permission to read nodes still gets a plan, minus headroom.
func (o *ResizeOptions) nodeState(ctx context.Context, pod *corev1.Pod) (*resize.NodeState, *corev1.Node, string) {
	if pod.Spec.NodeName == "" {
		return nil, nil, ""
	}
	node := &corev1.Node{}
	if err := o.clients.Client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); err != nil {
		return nil, nil, fmt.Sprintf("node headroom not checked: cannot read node %s: %v", pod.Spec.NodeName, err)
	}
	var pods corev1.PodList
	if err := o.clients.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": pod.Spec.NodeName}); err != nil {
		return nil, nil, fmt.Sprintf("node headroom not checked: cannot list pods on node %s: %v", pod.Spec.NodeName, err)
	}
	ns := &resize.NodeState{Allocatable: node.Status.Allocatable, Labels: node.Labels, DeclaredFeatures: node.Status.DeclaredFeatures}
	for i := range pods.Items {
		ns.Pods = append(ns.Pods, &pods.Items[i])
	}
	return ns, node, ""
}

func serverVerdict(err error) *ServerDryRun {
	if err == nil {
		return &ServerDryRun{Outcome: string(resize.Accepted)}
	}
	return &ServerDryRun{Outcome: string(resize.Refused), Message: err.Error()}
}

// refusalExit maps an Apply error to the CLI's exit codes.
func refusalExit(err error) error {
	if err == nil {
		return nil
	}
	var r *actuator.Refusal
	if errors.As(err, &r) && (r.Kind == actuator.RefusedAdmission || r.Kind == actuator.RefusedValidation) {
		return exit.WithCode(exit.Refused, err)
	}
	return err
}

// PreflightReport is the machine-readable preflight (-o json|yaml), and the
// human one's source.
type PreflightReport struct {
	Namespace  string               `json:"namespace"`
	Pod        string               `json:"pod"`
	Node       string               `json:"node,omitempty"`
	Server     string               `json:"server"`
	Outcome    resize.Outcome       `json:"outcome"`
	Rule       resize.Rule          `json:"rule,omitempty"`
	Message    string               `json:"message,omitempty"`
	Violations []resize.Violation   `json:"violations,omitempty"`
	Predicted  resize.Prediction    `json:"predicted,omitempty"`
	NoChange   bool                 `json:"noChange,omitempty"`
	QoSBefore  corev1.PodQOSClass   `json:"qosBefore"`
	QoSAfter   corev1.PodQOSClass   `json:"qosAfter"`
	Containers []ContainerPreflight `json:"containers"`
	PodLevel   *resize.PodLevel     `json:"podLevel,omitempty"`
	Headroom   *HeadroomReport      `json:"headroom,omitempty"`
	Preemption *PreemptionReport    `json:"preemption,omitempty"`
	Warnings   []string             `json:"warnings,omitempty"`
	Patch      json.RawMessage      `json:"patch,omitempty"`

	ServerDryRun *ServerDryRun `json:"serverDryRun,omitempty"`
	Result       *ResizeResult `json:"result,omitempty"`
}

// ContainerPreflight is one container's planned change.
type ContainerPreflight struct {
	Name          string                      `json:"name"`
	Kind          resize.Kind                 `json:"kind"`
	Changed       bool                        `json:"changed"`
	Restart       bool                        `json:"restart"`
	RestartReason string                      `json:"restartReason,omitempty"`
	Before        corev1.ResourceRequirements `json:"before"`
	After         corev1.ResourceRequirements `json:"after"`
}

// HeadroomReport is the node arithmetic behind the prediction.
type HeadroomReport struct {
	Allocatable       corev1.ResourceList `json:"allocatable"`
	RequestedByOthers corev1.ResourceList `json:"requestedByOthers"`
	Free              corev1.ResourceList `json:"free"`
	Needed            corev1.ResourceList `json:"needed"`
}

// ServerDryRun is the apiserver's verdict on a server-side dry run.
type ServerDryRun struct {
	Outcome string `json:"outcome"`
	Message string `json:"message,omitempty"`
	// MatchesPrediction is false when the apiserver disagrees with tailor.
	MatchesPrediction bool `json:"matchesPrediction"`
}

// ResizeResult is what happened after the resize was sent.
type ResizeResult struct {
	State             string           `json:"state"`
	Message           string           `json:"message,omitempty"`
	Seconds           float64          `json:"seconds,omitempty"`
	Restarts          []RestartCounter `json:"restarts,omitempty"`
	MatchesPrediction bool             `json:"matchesPrediction"`
}

// RestartCounter is one container's restart count before and after.
type RestartCounter struct {
	Container string `json:"container"`
	Before    int32  `json:"before"`
	After     int32  `json:"after"`
	Predicted bool   `json:"restartPredicted"`
}

func newPreflightReport(pod *corev1.Pod, plan *resize.Result, server actuator.Server) *PreflightReport {
	r := &PreflightReport{
		Namespace: pod.Namespace, Pod: pod.Name, Node: pod.Spec.NodeName, Server: server.GitVersion,
		Outcome: plan.Outcome, Rule: plan.Rule, Message: plan.Message, Violations: plan.Violations,
		Predicted: plan.Predicted, NoChange: plan.NoChange, QoSBefore: plan.QoSBefore, QoSAfter: plan.QoSAfter,
		PodLevel: plan.PodLevel, Warnings: plan.Warnings, Patch: plan.Patch,
	}
	for _, c := range plan.Containers {
		r.Containers = append(r.Containers, ContainerPreflight{
			Name: c.Name, Kind: c.Kind, Changed: c.Changed, Restart: c.Restart, RestartReason: c.RestartReason,
			Before: c.Before, After: c.After,
		})
	}
	if h := plan.Headroom; h.Known {
		r.Headroom = &HeadroomReport{Allocatable: h.Allocatable, RequestedByOthers: h.RequestedByOthers, Free: h.Free, Needed: h.Needed}
	}
	return r
}

func resultOf(before, after *corev1.Pod, obs actuator.Observation, took time.Duration, plan *resize.Result) *ResizeResult {
	res := &ResizeResult{State: string(obs.State), Message: obs.Message, Seconds: took.Seconds()}
	if len(obs.Pending) > 0 {
		res.Message = strings.TrimSpace(res.Message + " " + strings.Join(obs.Pending, "; "))
	}
	counts := func(p *corev1.Pod) map[string]int32 {
		m := map[string]int32{}
		for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			m[s.Name] = s.RestartCount
		}
		return m
	}
	b, a := counts(before), counts(after)
	matches := true
	for _, c := range plan.Containers {
		rc := RestartCounter{Container: c.Name, Before: b[c.Name], After: a[c.Name], Predicted: c.Restart}
		res.Restarts = append(res.Restarts, rc)
		if obs.State == actuator.StateDone && (rc.After > rc.Before) != c.Restart {
			matches = false
		}
	}
	switch plan.Predicted {
	case resize.InPlace:
		matches = matches && obs.State == actuator.StateDone
	case resize.Deferred:
		matches = matches && (obs.State == actuator.StateDeferred || obs.State == actuator.StateDone)
	case resize.Infeasible:
		matches = matches && obs.State == actuator.StateInfeasible
	}
	res.MatchesPrediction = matches
	return res
}

func (o *ResizeOptions) print(r *PreflightReport) error {
	if r.ServerDryRun != nil {
		r.ServerDryRun.MatchesPrediction = r.ServerDryRun.Outcome == string(r.Outcome)
	}
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.streams.Out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = o.streams.Out.Write(b)
		return err
	}
	if r.Result != nil {
		return printResult(o.streams.Out, r)
	}
	return printPreflight(o.streams.Out, r)
}

func printPreflight(out io.Writer, r *PreflightReport) error {
	fmt.Fprintf(out, "pod %s/%s on node %s (Kubernetes %s)\n", r.Namespace, r.Pod, printing.OrDash(r.Node), r.Server)
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CONTAINER\tRESOURCE\tREQUEST\tLIMIT\tRESTART")
	for _, c := range r.Containers {
		if !c.Changed && !c.Restart {
			continue
		}
		name := c.Name
		if c.Kind != resize.KindContainer {
			name += " (" + strings.ToLower(string(c.Kind)) + ")"
		}
		restart := "no"
		if c.Restart {
			restart = "yes: " + c.RestartReason
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, lim := change(c.Before.Requests, c.After.Requests, res), change(c.Before.Limits, c.After.Limits, res)
			// Only what changes is listed; a restart caused by a pod-level
			// limit shows on the container's first row.
			if !strings.Contains(req+lim, "->") && (c.Changed || res != corev1.ResourceCPU) {
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", name, res, req, lim, restart)
		}
	}
	if pl := r.PodLevel; pl != nil && !requirementsEqual(pl.Before, pl.After) {
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			var b, a corev1.ResourceRequirements
			if pl.Before != nil {
				b = *pl.Before
			}
			if pl.After != nil {
				a = *pl.After
			}
			fmt.Fprintf(w, "(pod level)\t%s\t%s\t%s\t-\n", res, change(b.Requests, a.Requests, res), change(b.Limits, a.Limits, res))
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "QoS class: %s -> %s\n", r.QoSBefore, r.QoSAfter)
	if h := r.Headroom; h != nil {
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			fmt.Fprintf(out, "node %s: %s allocatable, %s requested by other pods, %s free, %s needed\n", res,
				printing.Qty(h.Allocatable, res), printing.Qty(h.RequestedByOthers, res), printing.Qty(h.Free, res), printing.Qty(h.Needed, res))
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(out, "warning: %s\n", warn)
	}
	switch {
	case r.NoChange:
		fmt.Fprintln(out, "prediction: no change, nothing to send")
	case r.Outcome == resize.Refused:
		fmt.Fprintf(out, "prediction: Refused by rule %s: %s\n", r.Rule, r.Message)
		for _, v := range r.Violations[min(1, len(r.Violations)):] {
			fmt.Fprintf(out, "            also rule %s: %s\n", v.Rule, v.Message)
		}
	default:
		fmt.Fprintf(out, "prediction: Accepted, %s\n", predictionText(r.Predicted))
	}
	if r.Preemption != nil {
		printPreemption(out, r.Preemption)
	}
	if s := r.ServerDryRun; s != nil {
		verdict := "agrees"
		if !s.MatchesPrediction {
			verdict = "DISAGREES with tailor's prediction"
		}
		fmt.Fprintf(out, "server dry run: %s (%s)", s.Outcome, verdict)
		if s.Message != "" {
			fmt.Fprintf(out, ": %s", s.Message)
		}
		fmt.Fprintln(out)
	}
	return nil
}

func predictionText(p resize.Prediction) string {
	switch p {
	case resize.InPlace:
		return "the kubelet can apply it now"
	case resize.Deferred:
		return "but Deferred: it fits the node but not what is free now; the kubelet will retry when room appears"
	case resize.Infeasible:
		return "but Infeasible: the node can never fit it"
	case resize.Unscheduled:
		return "the pod is not on a node yet"
	}
	return string(p)
}

func printResult(out io.Writer, r *PreflightReport) error {
	res := r.Result
	fmt.Fprintf(out, "result: %s after %.2fs", res.State, res.Seconds)
	if res.Message != "" {
		fmt.Fprintf(out, " (%s)", res.Message)
	}
	fmt.Fprintln(out)
	sort.Slice(res.Restarts, func(i, j int) bool { return res.Restarts[i].Container < res.Restarts[j].Container })
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "CONTAINER\tRESTARTS\tPREDICTED RESTART")
	for _, rc := range res.Restarts {
		fmt.Fprintf(w, "%s\t%d -> %d\t%v\n", rc.Container, rc.Before, rc.After, rc.Predicted)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if res.MatchesPrediction {
		fmt.Fprintln(out, "outcome matches the prediction")
	} else {
		fmt.Fprintln(out, "outcome DIFFERS from the prediction")
	}
	return nil
}

func change(before, after corev1.ResourceList, r corev1.ResourceName) string {
	b, a := printing.Qty(before, r), printing.Qty(after, r)
	if b == a {
		return b
	}
	return b + " -> " + a
}

func requirementsEqual(a, b *corev1.ResourceRequirements) bool {
	if a == nil || b == nil {
		return a == b
	}
	return listsEqual(a.Requests, b.Requests) && listsEqual(a.Limits, b.Limits)
}

func listsEqual(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
