package deploy

import (
	"github.com/tailorhq/tailor/test/cluster"

	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestMetricsReaderRender: both installs render the ClusterRole that may
// scrape the managers' secure metrics, get on /metrics and nothing else,
// under the install's name prefix and bound to nothing (TestHelmMatchesKustomize
// checks the binding side).
func TestMetricsReaderRender(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-metrics", "deploy-test-metrics"
	want := []any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}
	for name, objs := range map[string][]*unstructured.Unstructured{
		"kustomize": renderKustomize(t, namespace, release+"-"),
		"helm":      renderHelm(t, release, namespace),
	} {
		t.Run(name, func(t *testing.T) {
			var found int
			for _, o := range objs {
				if o.GetKind() != "ClusterRole" || !strings.HasSuffix(o.GetName(), "metrics-reader") {
					continue
				}
				found++
				if o.GetName() != release+"-tailor-metrics-reader" {
					t.Errorf("ClusterRole %s: want %s-tailor-metrics-reader", o.GetName(), release)
				}
				rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
				if diff := cmp.Diff(want, rules); diff != "" {
					t.Errorf("metrics-reader rules (-want,+got):\n%s", diff)
				}
			}
			if found != 1 {
				t.Errorf("%d metrics-reader ClusterRoles rendered, want 1", found)
			}
		})
	}
}

// TestHelmServiceMonitorScheme: with secure metrics (the default) the
// ServiceMonitor scrapes HTTPS with Prometheus's ServiceAccount token and
// the configured TLS check; with metrics.secure=false, plain HTTP as before.
// A certificate Secret is mounted where --metrics-cert-dir points, and is
// refused without secure metrics.
func TestHelmServiceMonitorScheme(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-metrics", "deploy-test-metrics"
	cases := map[string]struct {
		set      []string
		wantEp   map[string]any
		wantCert bool
	}{
		"secure (default)": {
			wantEp: map[string]any{"port": "metrics", "path": "/metrics", "interval": "30s", "honorLabels": true, "scheme": "https",
				"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token", "tlsConfig": map[string]any{"insecureSkipVerify": true}},
		},
		"secure with a CA": {
			set: []string{"metrics.certSecret=tailor-metrics-cert", "monitoring.serviceMonitor.tlsConfig.insecureSkipVerify=false",
				"monitoring.serviceMonitor.tlsConfig.ca.secret.name=tailor-metrics-cert", "monitoring.serviceMonitor.tlsConfig.ca.secret.key=ca.crt",
				"monitoring.serviceMonitor.tlsConfig.serverName=tailor"},
			wantEp: map[string]any{"port": "metrics", "path": "/metrics", "interval": "30s", "honorLabels": true, "scheme": "https",
				"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token", "tlsConfig": map[string]any{
					"insecureSkipVerify": false, "serverName": "tailor", "ca": map[string]any{"secret": map[string]any{"name": "tailor-metrics-cert", "key": "ca.crt"}}}},
			wantCert: true,
		},
		"plain HTTP": {
			set:    []string{"metrics.secure=false"},
			wantEp: map[string]any{"port": "metrics", "path": "/metrics", "interval": "30s", "honorLabels": true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set := append([]string{"monitoring.serviceMonitor.enabled=true"}, tc.set...)
			objs := renderHelmFor(t, monitoringAPIs, release, namespace, set...)
			var eps []any
			var deployment *unstructured.Unstructured
			for _, o := range objs {
				switch o.GetKind() {
				case "ServiceMonitor":
					eps, _, _ = unstructured.NestedSlice(o.Object, "spec", "endpoints")
				case "Deployment":
					deployment = o
				}
			}
			if diff := cmp.Diff([]any{tc.wantEp}, eps); diff != "" {
				t.Errorf("ServiceMonitor endpoints (-want,+got):\n%s", diff)
			}
			volumes, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "volumes")
			containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
			mounts, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "volumeMounts")
			var wantVolumes, wantMounts []any
			if tc.wantCert {
				wantVolumes = []any{map[string]any{"name": "metrics-certs", "secret": map[string]any{"secretName": "tailor-metrics-cert"}}}
				wantMounts = []any{map[string]any{"name": "metrics-certs", "mountPath": "/etc/tailor/metrics-certs", "readOnly": true}}
			}
			if diff := cmp.Diff(wantVolumes, volumes); diff != "" {
				t.Errorf("manager volumes (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(wantMounts, mounts); diff != "" {
				t.Errorf("manager volume mounts (-want,+got):\n%s", diff)
			}
		})
	}
	_, stderr, err := helmTemplate(t, nil, release, namespace, "metrics.secure=false", "metrics.certSecret=tailor-metrics-cert")
	if err == nil || !strings.Contains(stderr, "metrics.certSecret needs metrics.secure") {
		t.Errorf("metrics.certSecret without metrics.secure: err %v, stderr %q: want it refused", err, stderr)
	}
}
