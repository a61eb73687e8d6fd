package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/cli/flags"
	"github.com/tailorhq/tailor/internal/cli/kube"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/price"
	"github.com/tailorhq/tailor/internal/report"
	"github.com/tailorhq/tailor/test/builder"
)

var reportRows = []report.Row{
	{Namespace: "shop", Kind: "Deployment", Workload: "web", Container: "app", Replicas: 2,
		Requests: builder.List("500m", "256Mi"), Limits: builder.List("1", "512Mi"), Recommended: builder.List("200m", "300Mi"),
		Source: "policy web (Off)", SavingsCPU: 0.6, SavingsMemory: -88 << 20, Reason: "peak usage plus margin",
		MonthlyCostBefore: 31.025, MonthlyCostAfter: 13.81875},
	{Namespace: "shop", Kind: "Pod", Workload: "bare", Container: "app", Replicas: 1,
		Requests: builder.List("1", "1Gi"), Reason: "no policy and no usage history", MonthlyCostBefore: 32.85, MonthlyCostAfter: 32.85},
}

var examplePrices = price.Book{Default: price.Example, Example: true}

func TestReportOutputs(t *testing.T) {
	var table bytes.Buffer
	if err := printReport(&table, reportRows, examplePrices, "table", false); err != nil {
		t.Fatal(err)
	}
	want := `WORKLOAD         CONTAINER   REPLICAS   CPU    CPU REC   MEMORY   MEMORY REC   SAVES               COST/MONTH      SOURCE             REASON
deployment/web   app         2          500m   200m      256Mi    300Mi        0.60 cores, -88Mi   31.02 → 13.82   policy web (Off)   peak usage plus margin
pod/bare         app         1          1      -         1Gi      -            -                   32.85           -                  no policy and no usage history

MONTHLY COST     NOW     AT RECOMMENDATION   FREED
deployment/web   31.02   13.82               17.21
pod/bare         32.85   32.85               0.00
namespace shop   63.88   46.67               17.21

moving every request to its recommendation would free 0.60 cores, -88Mi, 17.21 a month at the example prices (0.04 a CPU core-hour and 0.005 a GiB-hour; not a real price: give yours with --price-cpu-core-hour and --price-memory-gib-hour)
`
	if diff := cmp.Diff(want, table.String()); diff != "" {
		t.Errorf("table (-want,+got):\n%s", diff)
	}

	var js bytes.Buffer
	if err := printReport(&js, reportRows, examplePrices, "json", false); err != nil {
		t.Fatal(err)
	}
	var list List
	if err := json.Unmarshal(js.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.APIVersion != APIVersion || len(list.Items) != 2 || list.Items[0].Recommended.Cpu().String() != "200m" {
		t.Errorf("json:\n%s", js.String())
	}
	if !list.Prices.Example || list.Prices.Default != price.Example || len(list.Workloads) != 2 || len(list.Namespaces) != 1 ||
		math.Abs(list.Total.MonthlyCostFreed-(31.025-13.81875)) > 1e-9 || list.Workloads[1].MonthlyCostFreed != 0 {
		t.Errorf("json costs: prices %+v, workloads %+v, namespaces %+v, total %+v", list.Prices, list.Workloads, list.Namespaces, list.Total)
	}
	for _, field := range []string{`"namespace"`, `"kind"`, `"workload"`, `"container"`, `"replicas"`, `"requests"`, `"limits"`, `"recommended"`, `"source"`, `"savingsCPU"`, `"savingsMemoryBytes"`, `"reason"`,
		`"monthlyCostBefore"`, `"monthlyCostAfter"`, `"prices"`, `"workloads"`, `"namespaces"`, `"total"`, `"monthlyCostFreed"`} {
		if !strings.Contains(js.String(), field) {
			t.Errorf("json lacks %s: the documented schema changed", field)
		}
	}

	var c bytes.Buffer
	if err := printReport(&c, reportRows, examplePrices, "csv", false); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	wantCSV := [][]string{
		reportColumns,
		{"shop", "Deployment", "web", "app", "2", "0.500", "1.000", "0.200", "268435456", "536870912", "314572800", "0.600", "-92274688", "policy web (Off)", "peak usage plus margin", "31.0250", "13.8187", "", ""},
		{"shop", "Pod", "bare", "app", "1", "1.000", "", "", "1073741824", "", "", "0.000", "0", "", "no policy and no usage history", "32.8500", "32.8500", "", ""},
	}
	if diff := cmp.Diff(wantCSV, records); diff != "" {
		t.Errorf("csv (-want,+got):\n%s", diff)
	}
}

func TestReportValidate(t *testing.T) {
	for _, tc := range []struct {
		o    ReportOptions
		want string
	}{
		{ReportOptions{Output: "yaml", Window: "7d"}, `unknown output format "yaml"`},
		{ReportOptions{Output: "table", Window: "a week"}, `invalid --window "a week"`},
		{ReportOptions{Output: "table", Window: "1m"}, "--window 1m is shorter than one 5m step"},
		{ReportOptions{Output: "table", Window: "7d", Step: "fast"}, `invalid --step "fast"`},
		{ReportOptions{Output: "table", Window: "7d", Step: "0s"}, `invalid --step "0s"`},
		{ReportOptions{Output: "table", Window: "30d", Step: "1m"}, "--window 30d over --step 1m is 43200 samples a series; Prometheus returns at most 11000"},
		{ReportOptions{Output: "csv", Window: "7d", Selector: "app in (x"}, "invalid selector"},
		{ReportOptions{Output: "diff", Window: "7d"}, "-o diff edits the manifests under --manifests DIR: name the directory"},
		{ReportOptions{Output: "table", Window: "7d", Manifests: "."}, "--manifests is read by -o patch and -o diff only"},
		{ReportOptions{Output: "patch", Window: "7d", Manifests: "testdata/none"}, `--manifests "testdata/none" is not a directory`},
		{ReportOptions{Output: "table", Window: "7d", prices: flags.Prices{Given: 1, Prices: price.Example}}, "give both --price-cpu-core-hour and --price-memory-gib-hour"},
		{ReportOptions{Output: "table", Window: "7d", prices: flags.Prices{Given: 2, Prices: price.Prices{CPUCoreHour: -0.04}}}, "the cpu core-hour price -0.04 is not a price"},
	} {
		err := tc.o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
	for _, ok := range []ReportOptions{{Output: "json", Window: "48h"}, {Output: "json", Window: "15m", Step: "1m"},
		{Output: "patch", Window: "7d"}, {Output: "diff", Window: "7d", Manifests: "testdata/gitops/manifests"},
		{Output: "table", Window: "7d", prices: flags.Prices{Given: 2, Prices: price.Prices{}}}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", ok, err)
		}
	}
}

// Prices come from the flags, and from the nodes that carry their own:
// each pod is priced at its node's.
func TestReportPrices(t *testing.T) {
	scheme, err := manager.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	arm := builder.Node("arm").Obj()
	arm.Annotations = map[string]string{price.CPUKey: "0.02", price.MemoryKey: "0.002"}
	pod := func(name, node string) *corev1.Pod {
		return builder.Pod(name).Namespace("shop").Node(node).Label("app", "web").Label("pod-template-hash", "5d4b1").Owner("ReplicaSet", "web-5d4b1", "u").
			Container(builder.Container("app").Requests("1", "2Gi")).Running().Obj()
	}
	pol := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: v1alpha1.TailorPolicySpec{TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
		Status: v1alpha1.TailorPolicyStatus{Recommendation: &v1alpha1.Recommendation{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{
			{ContainerName: "app", Target: builder.List("500m", "1Gi"), LowerBound: builder.List("500m", "1Gi")}}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(builder.Node("x86").Obj(), arm, pod("web-5d4b1-a", "x86"), pod("web-5d4b1-b", "arm"), pol).Build()
	run := func(args ...string) string {
		var out bytes.Buffer
		o := &ReportOptions{configFlags: genericclioptions.NewConfigFlags(false),
			streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: io.Discard},
			now:     func() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) },
			clients: &kube.Clients{Namespace: "shop"}, client: c}
		cmd := o.command()
		cmd.SetArgs(append([]string{"--price-cpu-core-hour", "0.05", "--price-memory-gib-hour", "0.01"}, args...))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	var list List
	if err := json.Unmarshal([]byte(run("-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	const h = price.HoursPerMonth
	// 1 core and 2Gi on each node, to 500m and 1Gi.
	wantBefore, wantAfter := h*((0.05+2*0.01)+(0.02+2*0.002)), h*((0.025+0.01)+(0.01+0.002))
	if len(list.Items) != 1 || math.Abs(list.Items[0].MonthlyCostBefore-wantBefore) > 1e-9 || math.Abs(list.Items[0].MonthlyCostAfter-wantAfter) > 1e-9 {
		t.Fatalf("items %+v; want %v before, %v after", list.Items, wantBefore, wantAfter)
	}
	if list.Prices.Example || list.Prices.Default != (price.Prices{CPUCoreHour: 0.05, MemoryGiBHour: 0.01}) ||
		list.Prices.Nodes["arm"] != (price.Prices{CPUCoreHour: 0.02, MemoryGiBHour: 0.002}) || len(list.Prices.Nodes) != 1 {
		t.Errorf("prices %+v", list.Prices)
	}
	table := run()
	if want := fmt.Sprintf("%s a month at 0.05 a CPU core-hour and 0.01 a GiB-hour, 1 node at its own\n", money(wantBefore-wantAfter)); !strings.HasSuffix(table, want) {
		t.Errorf("table ends:\n%s\nwant %q", table, want)
	}
}
