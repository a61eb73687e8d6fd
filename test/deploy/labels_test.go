package deploy

import (
	"github.com/tailorhq/tailor/test/cluster"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCommonLabels: every object either install renders, the CRDs, RBAC
// and ServiceAccounts included, carries the common app.kubernetes.io labels,
// so a platform team finds (and prunes) all of tailor by label; RBAC,
// ServiceAccounts and workloads also say whose they are (component manager
// or agent). Helm's templated objects name the release; its CRDs, which
// Helm installs untemplated from crds/ and every release shares, carry the
// labels generated into them.
func TestCommonLabels(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-labels", "deploy-test-labels"
	common := map[string]string{"app.kubernetes.io/name": "tailor", "app.kubernetes.io/part-of": "tailor"}
	helmLabels := map[string]string{"app.kubernetes.io/instance": release, "app.kubernetes.io/managed-by": "Helm"}
	owned := map[string]bool{"ServiceAccount": true, "Role": true, "ClusterRole": true, "RoleBinding": true, "ClusterRoleBinding": true,
		"Deployment": true, "DaemonSet": true}
	cases := map[string]struct {
		objs  func(t *testing.T) []*unstructured.Unstructured
		extra map[string]string
	}{
		"kustomize": {objs: func(t *testing.T) []*unstructured.Unstructured {
			return renderKustomize(t, namespace, release+"-", "eviction", "metrics-server", "dashboard")
		}, extra: map[string]string{"app.kubernetes.io/managed-by": "kustomize"}},
		"kustomize agent": {objs: func(t *testing.T) []*unstructured.Unstructured {
			return renderKustomizeAgent(t, namespace, namespace+"-agent", release+"-")
		}, extra: map[string]string{"app.kubernetes.io/managed-by": "kustomize"}},
		"helm": {objs: func(t *testing.T) []*unstructured.Unstructured {
			return renderHelm(t, release, namespace, "evictions.enabled=true", "metricsSource=metrics-server", "agent.enabled=true",
				"dashboard.enabled=true", "replicaCount=2", "monitoring.serviceMonitor.enabled=true", "monitoring.podMonitor.enabled=true",
				"monitoring.prometheusRule.enabled=true", "monitoring.grafanaDashboard.enabled=true", "networkPolicy.enabled=true", "monitoring.assumeServed=true")
		}, extra: helmLabels},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, o := range tc.objs(t) {
				labels := o.GetLabels()
				want := common
				if o.GetKind() != "CustomResourceDefinition" {
					want = merged(common, tc.extra)
				}
				for k, v := range want {
					if labels[k] != v {
						t.Errorf("%s %s: label %s=%q, want %q", o.GetKind(), o.GetName(), k, labels[k], v)
					}
				}
				if c := labels["app.kubernetes.io/component"]; owned[o.GetKind()] && c != "manager" && c != "agent" {
					t.Errorf("%s %s: label app.kubernetes.io/component=%q, want manager or agent", o.GetKind(), o.GetName(), c)
				}
			}
		})
	}
}

func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// TestOneDeletePerPatchFile: no patch file under config/ holds more than
// one $patch: delete document. Two in one file make kustomize v5.5 (the
// kustomize of kubectl 1.32) panic; the kustomize module the tests build
// with does not, so this is checked on the files.
func TestOneDeletePerPatchFile(t *testing.T) {
	cluster.Offline(t)
	root := filepath.Join(repoRoot(t), "config")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if n := strings.Count(string(data), "\n$patch: delete"); n > 1 || (n == 1 && strings.Contains(string(data), "\n---\n")) {
			t.Errorf("%s: a $patch: delete in a file of several documents; give each delete a file of its own", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
