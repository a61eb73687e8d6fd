//go:build e2e

package crd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/test/cluster"
)

// TestColumnsAndStatusSubresource stores the full sample, writes a status
// through the status subresource as the controller will, and reads the
// table kubectl get prints: the printer columns' JSONPaths must follow the
// types, and a status sent with the object must be ignored.
func TestColumnsAndStatusSubresource(t *testing.T) {
	cluster.Shared(t)
	ctx := context.Background()
	_, this, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(this), "..", "..", "config", "samples", "tailorpolicy_full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatal(err)
	}
	obj.SetNamespace(namespace)
	// Its own name: TestSamples, beside it, dry-runs the same sample's
	// create in this namespace, which a stored "checkout" would refuse.
	obj.SetName("columns-" + obj.GetName())
	obj.Object["status"] = map[string]any{"observedGeneration": int64(7)}
	client := dyn.Resource(policyGVR).Namespace(namespace)
	created, err := client.Create(ctx, &obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the full sample: %v", err)
	}
	t.Cleanup(func() { _ = client.Delete(context.Background(), created.GetName(), metav1.DeleteOptions{}) })
	if _, found := created.Object["status"]; found {
		t.Errorf("status sent with the object was stored: %v", created.Object["status"])
	}

	status := `
observedGeneration: 1
recommendation:
  containerRecommendations:
  - containerName: app
    target: {cpu: 250m, memory: 300Mi}
    lowerBound: {cpu: 100m, memory: 200Mi}
    upperBound: {cpu: 1, memory: 1Gi}
    uncappedTarget: {cpu: 250m, memory: 300Mi}
pods:
- {podName: checkout-0, lastResizeTime: "2026-01-01T00:00:00Z", result: Done, message: "cpu 200m -> 250m"}
conditions:
- {type: Ready, status: "True", reason: Acting, message: resizing in place, lastTransitionTime: "2026-01-01T00:00:00Z"}
- {type: RecommendationProvided, status: "True", reason: Recommended, message: every container, lastTransitionTime: "2026-01-01T00:00:00Z"}
- {type: ResizesBlocked, status: "True", reason: RestartNotAllowed, message: "container app: memory needs a restart", lastTransitionTime: "2026-01-01T00:00:00Z"}
`
	var st map[string]any
	if err := yaml.Unmarshal([]byte(status), &st); err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = st
	if _, err := client.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing status: %v", err)
	}

	raw, err := restClient.Get().
		AbsPath("/apis", policyGVR.Group, policyGVR.Version, "namespaces", namespace, policyGVR.Resource, created.GetName()).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading the table: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(table.Rows))
	}
	got := map[string]string{}
	var names []string
	for i, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
		got[c.Name] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	if diff := cmp.Diff([]string{"Name", "Mode", "Kind", "Target", "CPU", "Memory", "Ready", "Blocked", "Age"}, names); diff != "" {
		t.Errorf("columns (-want,+got):\n%s", diff)
	}
	delete(got, "Age")
	want := map[string]string{
		"Name": "columns-checkout", "Mode": "InPlaceOrRecreate", "Kind": "StatefulSet", "Target": "checkout",
		"CPU": "250m", "Memory": "300Mi", "Ready": "True", "Blocked": "RestartNotAllowed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("row (-want,+got):\n%s", diff)
	}
}
