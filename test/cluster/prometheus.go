package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// PrometheusTargetsDir is where the local cluster's Prometheus
// (hack/addons/prometheus.sh) finds the pods a test asks it to scrape, one
// file_sd file a test: Debian's Prometheus has no kubernetes_sd.
const PrometheusTargetsDir = "/var/lib/tailor-dev/prometheus/targets"

// ScrapePods has the local Prometheus scrape /metrics on port of each pod
// (by its IP), its series labelled with the pod's namespace and name, until
// the test ends. name tells one test's file from another's.
func ScrapePods(t *testing.T, name string, port int, pods ...corev1.Pod) {
	t.Helper()
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	var groups []group
	for _, p := range pods {
		if p.Status.PodIP == "" {
			t.Fatalf("ScrapePods: pod %s/%s has no IP yet", p.Namespace, p.Name)
		}
		groups = append(groups, group{
			Targets: []string{fmt.Sprintf("%s:%d", p.Status.PodIP, port)},
			Labels:  map[string]string{"namespace": p.Namespace, "pod": p.Name},
		})
	}
	b, err := json.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(PrometheusTargetsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Written aside and renamed: Prometheus watches the directory and
	// must never read half a file.
	path := filepath.Join(PrometheusTargetsDir, name+".json")
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(path) })
}
