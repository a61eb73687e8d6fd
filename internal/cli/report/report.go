package report

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/amount"
	"github.com/tailorhq/tailor/internal/cli/exit"
	"github.com/tailorhq/tailor/internal/cli/flags"
	"github.com/tailorhq/tailor/internal/cli/kube"
	"github.com/tailorhq/tailor/internal/cli/printing"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/metrics/prometheus"
	"github.com/tailorhq/tailor/internal/price"
	"github.com/tailorhq/tailor/internal/recommend"
	"github.com/tailorhq/tailor/internal/report"
	"github.com/tailorhq/tailor/internal/resize"
)

// APIVersion versions the JSON form of `tailor report`; a change that
// renames or removes a field bumps it.
const APIVersion = "report.tailor.dev/v1"

// ReportOptions holds `tailor report` flags and state.
type ReportOptions struct {
	configFlags   *genericclioptions.ConfigFlags
	streams       genericiooptions.IOStreams
	Selector      string
	AllNamespaces bool
	Output        string
	PrometheusURL string
	Window        string
	Step          string
	// Manifests is a directory of YAML manifests -o patch and -o diff
	// take the workloads' templates from, instead of the cluster.
	Manifests string

	prices           flags.Prices
	prometheus       flags.PrometheusClient
	prometheusClient *config.HTTPClientConfig
	window, step     time.Duration
	clients          *kube.Clients
	client           client.Client
	now              func() time.Time
	// server is the Kubernetes version templates are planned for; nil:
	// the apiserver's.
	server *resize.Version
}

// NewCommand is `tailor report`.
func NewCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ReportOptions{configFlags: configFlags, streams: streams, now: time.Now}
	return o.command()
}

// command is the cobra command whose flags fill o.
func (o *ReportOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report [-n NS | -A] [-l selector] [-o table|json|csv|patch|diff] [--manifests DIR]",
		Short: "Show each workload's requests against tailor's recommendation, and what moving to it would save",
		Long: `Show, for every workload's containers, the requests and limits they have,
tailor's recommendation, the difference across the replicas, and why.

A workload a TailorPolicy selects (in any mode, Off included) takes the
policy's recommendation. With --prometheus-url, every workload's usage over
--window is read too: workloads without a policy get what tailor's
recommender makes of it, so the value shows before anything is installed,
and every row's reason gives the p95 and peak CPU, throttling and peak
memory. -o json and -o csv are stable schemas (docs/report.md).

Each row's requests are priced, now and at the recommendation, at
--price-cpu-core-hour and --price-memory-gib-hour (examples unless given;
a node's own prices.tailor.dev/* annotations or labels price its pods),
and the table sums them per workload and namespace.

-o patch prints, for each workload whose template asks for other than the
recommendation, a strategic-merge patch of its template's container
resources (a kustomize patch), shaped as the admission policy shapes a new
pod: the policy's controlledValues and bounds, the pod's QoS class, the
namespace's LimitRanges and quotas, the HPAs' utilization targets. With
--manifests DIR the templates are read from the YAML files under DIR, and
-o diff prints the same values written into those files, as a unified
diff. Workloads left out are said on stderr, with why.`,
		Example: `  tailor report -n shop
  tailor report -A -o csv > sizes.csv
  tailor report -n shop --prometheus-url http://localhost:9090 --window 7d
  tailor report -n shop --price-cpu-core-hour 0.031 --price-memory-gib-hour 0.0042
  tailor report -n shop -o patch > overlays/prod/tailor-patches.yaml
  tailor report -n shop -o diff --manifests deploy/ | git apply`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.prices.Complete(cmd.Flags())
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "label selector for the pods to report on")
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "report on every namespace")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "table", "output format: table, json, csv, patch (a strategic-merge patch per workload) or diff (of the files under --manifests)")
	cmd.Flags().StringVar(&o.Manifests, "manifests", "", "with -o patch or -o diff, a directory of YAML manifests (searched recursively) to read the workloads' templates from instead of the cluster")
	o.prices.Bind(cmd.Flags())
	cmd.Flags().StringVar(&o.PrometheusURL, "prometheus-url", "", "a Prometheus scraping the kubelets' cAdvisor: read each workload's usage history from it")
	o.prometheus.Bind(cmd.Flags())
	cmd.Flags().StringVar(&o.Window, "window", "7d", "how much history to read from Prometheus, as a Prometheus duration (7d, 48h)")
	cmd.Flags().StringVar(&o.Step, "step", model.Duration(report.DefaultStep).String(), "the history's resolution, one sample per step, and the range of its CPU rate(): at least four of your Prometheus' scrape intervals of the kubelets' cAdvisor. A container's first step of CPU history is left out (a rate over a series younger than its range reads low)")
	return cmd
}

// Complete fills in what the flags imply. It does not connect, so that
// Validate tells a mistake in the command line before the cluster is read.
func (o *ReportOptions) Complete(_ []string) error { return nil }

// connect builds the clients Run reads the cluster with.
func (o *ReportOptions) connect() error {
	c, err := kube.NewClients(o.configFlags)
	if err != nil {
		return err
	}
	o.clients = c
	cfg, err := kube.RESTConfig(o.configFlags)
	if err != nil {
		return err
	}
	scheme, err := manager.Scheme()
	if err != nil {
		return err
	}
	if o.client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("creating client for %s: %w", cfg.Host, err)
	}
	return nil
}

// Validate checks flag values.
func (o *ReportOptions) Validate() error {
	switch o.Output {
	case "table", "json", "csv", "patch":
	case "diff":
		if o.Manifests == "" {
			return exit.Usagef("-o diff edits the manifests under --manifests DIR: name the directory")
		}
	default:
		return exit.Usagef("unknown output format %q: use table, json, csv, patch or diff", o.Output)
	}
	if o.Manifests != "" {
		if o.Output != "patch" && o.Output != "diff" {
			return exit.Usagef("--manifests is read by -o patch and -o diff only")
		}
		if st, err := os.Stat(o.Manifests); err != nil || !st.IsDir() {
			return exit.Usagef("--manifests %q is not a directory", o.Manifests)
		}
	}
	if err := o.prices.Validate(); err != nil {
		return err
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return exit.Usagef("invalid selector %q: %v", o.Selector, err)
	}
	d, err := model.ParseDuration(o.Window)
	if err != nil || d <= 0 {
		return exit.Usagef("invalid --window %q: use a Prometheus duration such as 7d or 48h", o.Window)
	}
	o.window = time.Duration(d)
	if o.Step == "" {
		o.Step = model.Duration(report.DefaultStep).String()
	}
	step, err := model.ParseDuration(o.Step)
	if err != nil || step <= 0 {
		return exit.Usagef("invalid --step %q: use a Prometheus duration such as 5m or 1m", o.Step)
	}
	o.step = time.Duration(step)
	if o.window < o.step {
		return exit.Usagef("--window %s is shorter than one %s step of history", o.Window, o.Step)
	}
	if n := o.window / o.step; n > report.MaxPoints {
		return exit.Usagef("--window %s over --step %s is %d samples a series; Prometheus returns at most %d: a longer step or a shorter window", o.Window, o.Step, n, report.MaxPoints)
	}
	if o.PrometheusURL == "" {
		if o.prometheus.Given() {
			return exit.Usagef("the --prometheus-* client flags need --prometheus-url, the Prometheus they are for")
		}
		return nil
	}
	if err := flags.ValidatePrometheusURL("--prometheus-url", o.PrometheusURL); err != nil {
		return err
	}
	o.prometheusClient, err = o.prometheus.ClientConfig(o.PrometheusURL)
	return err
}

// Run reads pods, policies and, if asked, the history; then prints.
func (o *ReportOptions) Run(ctx context.Context) error {
	if o.client == nil {
		if err := o.connect(); err != nil {
			return err
		}
	}
	ns := o.clients.Namespace
	var opts []client.ListOption
	if !o.AllNamespaces {
		opts = append(opts, client.InNamespace(ns))
	}
	var pods corev1.PodList
	podOpts := opts
	if o.Selector != "" {
		sel, _ := labels.Parse(o.Selector)
		podOpts = append(append([]client.ListOption(nil), opts...), client.MatchingLabelsSelector{Selector: sel})
	}
	if err := o.client.List(ctx, &pods, podOpts...); err != nil {
		return kube.ExplainAPIError(err, "list", "pods", ns)
	}
	var policies v1alpha1.TailorPolicyList
	if err := o.client.List(ctx, &policies, opts...); err != nil && !meta.IsNoMatchError(err) {
		// Without the CRD there are no policies: the report still works
		// from the history.
		return kube.ExplainAPIError(err, "list", "tailorpolicies", ns)
	}
	workloads := report.Group(pods.Items)
	report.Match(workloads, policies.Items)
	now := o.now()
	if o.PrometheusURL != "" {
		c, err := prometheus.NewClient(o.PrometheusURL, o.prometheusClient, 0)
		if err != nil {
			return fmt.Errorf("--prometheus-url %q: %w", o.PrometheusURL, err)
		}
		if err := report.ReadHistory(ctx, promv1.NewAPI(c), workloads, o.window, o.step, now); err != nil {
			return fmt.Errorf("prometheus at %s: %w", o.PrometheusURL, err)
		}
	}
	var book price.Book
	if o.Output != "patch" && o.Output != "diff" {
		book = o.priceBook(ctx)
	}
	rows, err := report.Build(workloads, recommend.DefaultConfig(), o.window, now, book)
	if err != nil {
		return err
	}
	if o.Output == "patch" || o.Output == "diff" {
		return o.runTemplates(ctx, workloads, rows, now)
	}
	return printReport(o.streams.Out, rows, book, o.Output, o.AllNamespaces)
}

// priceBook is the prices of the flags, and of the nodes that carry their
// own. Nodes that cannot be read leave every pod at the flags' prices,
// which stderr says.
func (o *ReportOptions) priceBook(ctx context.Context) price.Book {
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := o.client.List(ctx, nodes); err != nil {
		fmt.Fprintf(o.streams.ErrOut, "warning: nodes not read, so no node's own prices (%s, %s): %v\n", price.CPUKey, price.MemoryKey, err)
	}
	metas := make([]metav1.ObjectMeta, len(nodes.Items))
	for i := range nodes.Items {
		metas[i] = nodes.Items[i].ObjectMeta
	}
	book, err := price.NewBook(o.prices.Prices, o.prices.Example(), metas)
	if err != nil {
		fmt.Fprintf(o.streams.ErrOut, "warning: %v\n", err)
	}
	return book
}

// List is the JSON form of `tailor report`.
type List struct {
	APIVersion string       `json:"apiVersion"`
	Items      []report.Row `json:"items"`
	// Prices are what the costs are at.
	Prices price.Book `json:"prices"`
	// Workloads and Namespaces sum the items' costs, in the items'
	// order; Total sums them all.
	Workloads  []report.Cost `json:"workloads"`
	Namespaces []report.Cost `json:"namespaces"`
	Total      report.Cost   `json:"total"`
}

// reportColumns is the CSV header; each row follows it.
var reportColumns = []string{"namespace", "kind", "workload", "container", "replicas",
	"cpu_request", "cpu_limit", "cpu_recommended", "memory_request_bytes", "memory_limit_bytes", "memory_recommended_bytes",
	"savings_cpu_cores", "savings_memory_bytes", "source", "reason",
	"monthly_cost_before", "monthly_cost_after", "jvm_heap_option", "jvm_heap_advice"}

func printReport(w io.Writer, rows []report.Row, book price.Book, output string, allNamespaces bool) error {
	workloads, namespaces, total := report.Costs(rows)
	switch output {
	case "json":
		if rows == nil {
			rows = []report.Row{}
		}
		if workloads == nil {
			workloads, namespaces = []report.Cost{}, []report.Cost{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(List{APIVersion: APIVersion, Items: rows, Prices: book, Workloads: workloads, Namespaces: namespaces, Total: total})
	case "csv":
		cw := csv.NewWriter(w)
		if err := cw.Write(reportColumns); err != nil {
			return err
		}
		for _, r := range rows {
			rec := []string{r.Namespace, r.Kind, r.Workload, r.Container, strconv.Itoa(r.Replicas),
				cores(r.Requests), cores(r.Limits), cores(r.Recommended),
				bytesOf(r.Requests), bytesOf(r.Limits), bytesOf(r.Recommended),
				strconv.FormatFloat(r.SavingsCPU, 'f', 3, 64), strconv.FormatFloat(r.SavingsMemory, 'f', 0, 64), r.Source, r.Reason,
				strconv.FormatFloat(r.MonthlyCostBefore, 'f', 4, 64), strconv.FormatFloat(r.MonthlyCostAfter, 'f', 4, 64), "", ""}
			if j := r.JVM; j != nil {
				rec[len(rec)-2], rec[len(rec)-1] = j.Suggested, j.Message
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	}
	tw := printers.GetNewTabWriter(w)
	header := "WORKLOAD\tCONTAINER\tREPLICAS\tCPU\tCPU REC\tMEMORY\tMEMORY REC\tSAVES\tCOST/MONTH\tSOURCE\tREASON"
	if allNamespaces {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(tw, header)
	var cpu, mem float64
	for _, r := range rows {
		cost := money(r.MonthlyCostBefore)
		if len(r.Recommended) > 0 {
			cost += " → " + money(r.MonthlyCostAfter)
		}
		line := fmt.Sprintf("%s/%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", strings.ToLower(r.Kind), r.Workload, r.Container, r.Replicas,
			printing.Qty(r.Requests, corev1.ResourceCPU), printing.Qty(r.Recommended, corev1.ResourceCPU),
			printing.Qty(r.Requests, corev1.ResourceMemory), printing.Qty(r.Recommended, corev1.ResourceMemory),
			savingsText(r.SavingsCPU, r.SavingsMemory, r.Recommended), cost, printing.OrDash(r.Source), reasonText(r))
		if allNamespaces {
			line = r.Namespace + "\t" + line
		}
		fmt.Fprintln(tw, line)
		cpu, mem = cpu+r.SavingsCPU, mem+r.SavingsMemory
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "MONTHLY COST\tNOW\tAT RECOMMENDATION\tFREED")
	for _, c := range workloads {
		name := strings.ToLower(c.Kind) + "/" + c.Workload
		if allNamespaces {
			name = c.Namespace + "/" + name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, money(c.MonthlyCostBefore), money(c.MonthlyCostAfter), money(c.MonthlyCostFreed))
	}
	for _, c := range namespaces {
		fmt.Fprintf(tw, "namespace %s\t%s\t%s\t%s\n", c.Namespace, money(c.MonthlyCostBefore), money(c.MonthlyCostAfter), money(c.MonthlyCostFreed))
	}
	if len(namespaces) > 1 {
		fmt.Fprintf(tw, "total\t%s\t%s\t%s\n", money(total.MonthlyCostBefore), money(total.MonthlyCostAfter), money(total.MonthlyCostFreed))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nmoving every request to its recommendation would free %s, %s a month %s\n",
		savingsText(cpu, mem, corev1.ResourceList{"": resource.Quantity{}}), money(total.MonthlyCostFreed), pricesText(book))
	return nil
}

// reasonText is the row's reason, and what its JVM's heap makes of its
// memory limit where that says something.
func reasonText(r report.Row) string {
	if r.JVM == nil {
		return r.Reason
	}
	return strings.TrimPrefix(r.Reason+"; JVM: "+r.JVM.Message, "; ")
}

// money is an amount with two decimals, in the prices' currency.
func money(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// pricesText says what the costs are at.
func pricesText(b price.Book) string {
	at := fmt.Sprintf("%s a CPU core-hour and %s a GiB-hour",
		strconv.FormatFloat(b.Default.CPUCoreHour, 'f', -1, 64), strconv.FormatFloat(b.Default.MemoryGiBHour, 'f', -1, 64))
	s := "at " + at
	if b.Example {
		s = "at the example prices (" + at + "; not a real price: give yours with --price-cpu-core-hour and --price-memory-gib-hour)"
	}
	switch n := len(b.Nodes); n {
	case 0:
	case 1:
		s += ", 1 node at its own"
	default:
		s += fmt.Sprintf(", %d nodes at their own", n)
	}
	return s
}

func cores(l corev1.ResourceList) string {
	if _, ok := l[corev1.ResourceCPU]; ok {
		return strconv.FormatFloat(amount.In(l, corev1.ResourceCPU), 'f', 3, 64)
	}
	return ""
}

func bytesOf(l corev1.ResourceList) string {
	if q, ok := l[corev1.ResourceMemory]; ok {
		return strconv.FormatInt(q.Value(), 10)
	}
	return ""
}

// savingsText is "0.6 cores, 424Mi"; a negative figure is what the
// recommendation would take more.
func savingsText(cpu, mem float64, rec corev1.ResourceList) string {
	if len(rec) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f cores, %s", cpu, resource.NewQuantity(int64(mem), resource.BinarySI).String())
}
