package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tailorhq/tailor/internal/report"
	"github.com/tailorhq/tailor/test/builder"
)

var reportRows = []report.Row{
	{Namespace: "shop", Kind: "Deployment", Workload: "web", Container: "app", Replicas: 2,
		Requests: builder.List("500m", "256Mi"), Limits: builder.List("1", "512Mi"), Recommended: builder.List("200m", "300Mi"),
		Source: "policy web (Off)", SavingsCPU: 0.6, SavingsMemory: -88 << 20, Reason: "peak usage plus margin"},
	{Namespace: "shop", Kind: "Pod", Workload: "bare", Container: "app", Replicas: 1,
		Requests: builder.List("1", "1Gi"), Reason: "no policy and no usage history"},
}

func TestReportOutputs(t *testing.T) {
	var table bytes.Buffer
	if err := printReport(&table, reportRows, "table", false); err != nil {
		t.Fatal(err)
	}
	want := `WORKLOAD         CONTAINER   REPLICAS   CPU    CPU REC   MEMORY   MEMORY REC   SAVES               SOURCE             REASON
deployment/web   app         2          500m   200m      256Mi    300Mi        0.60 cores, -88Mi   policy web (Off)   peak usage plus margin
pod/bare         app         1          1      -         1Gi      -            -                   -                  no policy and no usage history

moving every request to its recommendation would free 0.60 cores, -88Mi
`
	if diff := cmp.Diff(want, table.String()); diff != "" {
		t.Errorf("table (-want,+got):\n%s", diff)
	}

	var js bytes.Buffer
	if err := printReport(&js, reportRows, "json", false); err != nil {
		t.Fatal(err)
	}
	var list ReportList
	if err := json.Unmarshal(js.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.APIVersion != ReportAPIVersion || len(list.Items) != 2 || list.Items[0].Recommended.Cpu().String() != "200m" {
		t.Errorf("json:\n%s", js.String())
	}
	for _, field := range []string{`"namespace"`, `"kind"`, `"workload"`, `"container"`, `"replicas"`, `"requests"`, `"limits"`, `"recommended"`, `"source"`, `"savingsCPU"`, `"savingsMemoryBytes"`, `"reason"`} {
		if !strings.Contains(js.String(), field) {
			t.Errorf("json lacks %s: the documented schema changed", field)
		}
	}

	var c bytes.Buffer
	if err := printReport(&c, reportRows, "csv", false); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	wantCSV := [][]string{
		reportColumns,
		{"shop", "Deployment", "web", "app", "2", "0.500", "1.000", "0.200", "268435456", "536870912", "314572800", "0.600", "-92274688", "policy web (Off)", "peak usage plus margin"},
		{"shop", "Pod", "bare", "app", "1", "1.000", "", "", "1073741824", "", "", "0.000", "0", "", "no policy and no usage history"},
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
	} {
		err := tc.o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
	for _, ok := range []ReportOptions{{Output: "json", Window: "48h"}, {Output: "json", Window: "15m", Step: "1m"}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", ok, err)
		}
	}
}
