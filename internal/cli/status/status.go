package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/internal/actuator"
	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/cli/kube"
	"github.com/tailorhq/tailor/internal/cli/printing"
	"github.com/tailorhq/tailor/internal/podcontainers"
)

// StatusOptions holds `tailor status` flags and state.
type StatusOptions struct {
	configFlags   *genericclioptions.ConfigFlags
	streams       genericiooptions.IOStreams
	Selector      string
	AllNamespaces bool
	Output        string
	Pods          []string

	clients *kube.Clients
}

// NewCommand is `tailor status`.
func NewCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &StatusOptions{configFlags: configFlags, streams: streams}
	cmd := &cobra.Command{
		Use:   "status [POD...] [-l selector] [-A]",
		Short: "Show each container's desired, allocated and actual resources and its resize state",
		Long: `Show, per container, the resources in the pod spec (desired), the ones the
kubelet admitted (allocated) and the ones it reports running with (actual),
with the pod's resize state: Done, Proposed, Pending-Deferred,
Pending-Infeasible, InProgress or Error.`,
		Example: `  tailor status web-0
  tailor status -l app=web -o wide
  tailor status -A -o json`,
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
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "label selector for the pods to show")
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "show pods in all namespaces")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: wide, json or yaml")
	return cmd
}

// Complete fills in what the flags imply. It does not connect, so that
// Validate tells a mistake in the command line before the cluster is read.
func (o *StatusOptions) Complete(args []string) error {
	o.Pods = args
	return nil
}

// Validate checks flag combinations.
func (o *StatusOptions) Validate() error {
	switch o.Output {
	case "", "wide", "json", "yaml":
	default:
		return exit.Usagef("unknown output format %q: use wide, json or yaml", o.Output)
	}
	if len(o.Pods) > 0 && o.Selector != "" {
		return exit.Usagef("give pod names or a selector (-l), not both")
	}
	if len(o.Pods) > 0 && o.AllNamespaces {
		return exit.Usagef("pod names need a namespace: use -n instead of -A")
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return exit.Usagef("invalid selector %q: %v", o.Selector, err)
	}
	return nil
}

// Run lists the pods and prints their resize status.
func (o *StatusOptions) Run(ctx context.Context) error {
	if o.clients == nil {
		c, err := kube.NewClients(o.configFlags)
		if err != nil {
			return err
		}
		o.clients = c
	}
	pods, err := o.pods(ctx)
	if err != nil {
		return err
	}
	report := make([]PodStatus, 0, len(pods))
	for i := range pods {
		report = append(report, podStatus(&pods[i]))
	}
	return printStatus(o.streams.Out, report, o.Output, o.AllNamespaces)
}

func (o *StatusOptions) pods(ctx context.Context) ([]corev1.Pod, error) {
	if len(o.Pods) > 0 {
		out := make([]corev1.Pod, 0, len(o.Pods))
		for _, name := range o.Pods {
			var p corev1.Pod
			if err := o.clients.Client.Get(ctx, client.ObjectKey{Namespace: o.clients.Namespace, Name: name}, &p); err != nil {
				return nil, kube.ExplainAPIError(err, "get", "pods", o.clients.Namespace)
			}
			out = append(out, p)
		}
		return out, nil
	}
	var list corev1.PodList
	opts := []client.ListOption{}
	if !o.AllNamespaces {
		opts = append(opts, client.InNamespace(o.clients.Namespace))
	}
	if o.Selector != "" {
		sel, _ := labels.Parse(o.Selector)
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	if err := o.clients.Client.List(ctx, &list, opts...); err != nil {
		return nil, kube.ExplainAPIError(err, "list", "pods", o.clients.Namespace)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return list.Items, nil
}

// PodStatus is the machine-readable form of `tailor status` (-o json|yaml).
type PodStatus struct {
	Namespace  string            `json:"namespace"`
	Pod        string            `json:"pod"`
	Node       string            `json:"node,omitempty"`
	QOSClass   string            `json:"qosClass,omitempty"`
	State      string            `json:"state"`
	Reason     string            `json:"reason,omitempty"`
	Message    string            `json:"message,omitempty"`
	Containers []ContainerStatus `json:"containers"`
}

// ContainerStatus is one container's resources at each stage.
type ContainerStatus struct {
	Name         string                       `json:"name"`
	Kind         string                       `json:"kind"`
	Desired      corev1.ResourceRequirements  `json:"desired"`
	Allocated    corev1.ResourceList          `json:"allocated,omitempty"`
	Actual       *corev1.ResourceRequirements `json:"actual,omitempty"`
	RestartCount int32                        `json:"restartCount"`
}

func podStatus(p *corev1.Pod) PodStatus {
	obs := actuator.Observe(p)
	msg := obs.Message
	if len(obs.Pending) > 0 {
		msg = strings.Join(obs.Pending, "; ")
	}
	ps := PodStatus{
		Namespace: p.Namespace, Pod: p.Name, Node: p.Spec.NodeName, QOSClass: string(p.Status.QOSClass),
		State: string(obs.State), Reason: obs.Reason, Message: msg,
	}
	if p.Spec.NodeName == "" || (p.Status.Phase == corev1.PodPending && len(p.Status.ContainerStatuses) == 0) {
		ps.State = "NotRunning"
	}
	add := func(c corev1.Container, kind string, statuses []corev1.ContainerStatus) {
		cs := ContainerStatus{Name: c.Name, Kind: kind, Desired: c.Resources}
		for _, st := range statuses {
			if st.Name == c.Name {
				cs.Allocated = st.AllocatedResources
				cs.Actual = st.Resources
				cs.RestartCount = st.RestartCount
			}
		}
		ps.Containers = append(ps.Containers, cs)
	}
	for _, c := range p.Spec.InitContainers {
		kind := "init"
		if podcontainers.IsSidecar(&c) {
			kind = "sidecar"
		}
		add(c, kind, p.Status.InitContainerStatuses)
	}
	for _, c := range p.Spec.Containers {
		add(c, "container", p.Status.ContainerStatuses)
	}
	return ps
}

func printStatus(out io.Writer, report []PodStatus, format string, withNamespace bool) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(report)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	if len(report) == 0 {
		_, err := fmt.Fprintln(out, "No pods found.")
		return err
	}
	w := printers.GetNewTabWriter(out)
	header := []string{"POD", "CONTAINER", "CPU REQ/LIM", "CPU ACTUAL", "MEM REQ/LIM", "MEM ACTUAL", "STATE", "RESTARTS"}
	if withNamespace {
		header = append([]string{"NAMESPACE"}, header...)
	}
	if format == "wide" {
		header = append(header, "ALLOCATED", "QOS", "NODE", "MESSAGE")
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, ps := range report {
		for _, c := range ps.Containers {
			var actual corev1.ResourceRequirements
			if c.Actual != nil {
				actual = *c.Actual
			}
			row := []string{ps.Pod, c.Name,
				printing.ReqLim(c.Desired, corev1.ResourceCPU), printing.ReqLim(actual, corev1.ResourceCPU),
				printing.ReqLim(c.Desired, corev1.ResourceMemory), printing.ReqLim(actual, corev1.ResourceMemory),
				ps.State, fmt.Sprint(c.RestartCount)}
			if c.Kind != "container" {
				row[1] += " (" + c.Kind + ")"
			}
			if withNamespace {
				row = append([]string{ps.Namespace}, row...)
			}
			if format == "wide" {
				row = append(row, fmt.Sprintf("cpu=%s,memory=%s", printing.Qty(c.Allocated, corev1.ResourceCPU), printing.Qty(c.Allocated, corev1.ResourceMemory)),
					ps.QOSClass, ps.Node, ps.Message)
			}
			fmt.Fprintln(w, strings.Join(row, "\t"))
		}
	}
	return w.Flush()
}
