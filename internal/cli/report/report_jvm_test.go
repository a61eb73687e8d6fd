package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/jvm"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/manifest"
	"github.com/tailorhq/tailor/test/builder"
)

// jvms is the testdata of the JVM tests: Deployments of JVMs whose heap
// options sit in each place a spec holds them.
const jvms = "testdata/jvm"

// jvmCluster is the shop namespace running testdata/jvm's manifests, one
// pod each, never resized (generation 1), each under a policy in mode Off.
func jvmCluster(t *testing.T) client.Client {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoDir(t), "internal", "cli", "report", jvms, "manifests", "jvms.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found, err := manifest.Parse("jvms.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	var objs []client.Object
	for _, o := range found {
		objs = append(objs, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: o.Ref.Name}, Spec: appsv1.DeploymentSpec{Template: *o.Template}})
		rs := o.Ref.Name + "-7c9f4"
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: rs + "-0", Generation: 1, Labels: map[string]string{"pod-template-hash": "7c9f4"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: types.UID(rs), Controller: &yes}},
			CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC))},
			Spec: *o.Template.Spec.DeepCopy(), Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	requestsOnly := v1alpha1.ControlledValuesRequestsOnly
	policy := func(name, cpu, memory string, spec func(*v1alpha1.TailorPolicySpec)) {
		p := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: v1alpha1.TailorPolicySpec{TargetRef: &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
				UpdatePolicy: &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}}}
		if spec != nil {
			spec(&p.Spec)
		}
		p.Status.Recommendation = &v1alpha1.Recommendation{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{
			{ContainerName: "app", Target: builder.List(cpu, memory), LowerBound: builder.List(cpu, memory)}}}
		objs = append(objs, p)
	}
	// orders sizes requests only: its 2Gi limit stays, far above what a
	// 256Mi heap reaches.
	policy("orders", "200m", "300Mi", func(s *v1alpha1.TailorPolicySpec) {
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "*", ControlledValues: &requestsOnly}}}
	})
	// billing's and search's heaps are a quarter and a half of their
	// limits, which the plan keeps (a heap sized from the limit is not
	// lowered with it): their heaps reach 704Mi of 2Gi, 2624Mi of 4Gi.
	policy("billing", "200m", "768Mi", nil)
	policy("search", "1", "1536Mi", nil)
	// cart's running pods waste 320Mi of their 1Gi above its 512Mi heap's
	// reach (704Mi); the plan's 800Mi limit leaves less than is worth a
	// restart, and the patch lowers the limit instead.
	policy("cart", "300m", "400Mi", nil)
	scheme, err := manager.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func runJVMs(t *testing.T, args ...string) (string, string) {
	t.Helper()
	return runReportOn(t, jvmCluster(t), args...)
}

// The patch moves each wasteful JVM's heap option where its manifest holds
// it, sized for the limit the same patch gives the template: through
// kustomize, each JVM starts with the option said, its heap's reach within
// its limit, and nothing changes but resources, command, args and the one
// variable.
func TestReportPatchJVM(t *testing.T) {
	patch, stderr := runJVMs(t, "-o", "patch")
	path := filepath.Join(repoDir(t), "internal", "cli", "report", jvms, "patch.yaml")
	if *update {
		if err := os.WriteFile(path, []byte(patch), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), patch); diff != "" {
		t.Errorf("patch.yaml (-want,+got):\n%s", diff)
	}
	if strings.Contains(stderr, "warning") {
		t.Errorf("stderr:\n%s", stderr)
	}

	root := t.TempDir()
	base, patched := filepath.Join(root, "base"), filepath.Join(root, "patched")
	for _, dir := range []string{base, patched} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(repoDir(t), "internal", "cli", "report", jvms, "manifests", "jvms.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "jvms.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	writeKustomization(t, base, "namespace: shop\nresources:\n- jvms.yaml\n")
	if err := os.WriteFile(filepath.Join(patched, "tailor.yaml"), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	writeKustomization(t, patched, "resources:\n- ../base\npatches:\n- path: tailor.yaml\n")
	before := render(t, base)
	wantHeap := map[string]string{
		"Deployment/orders":  "-Xmx1587m",
		"Deployment/billing": "-XX:MaxRAMPercentage=77",
		"Deployment/search":  "-XX:MaxRAMPercentage=78",
		"Deployment/cart":    "-Xmx512m",
	}
	for _, renderer := range renderers(t) {
		t.Run(renderer.name, func(t *testing.T) {
			after := renderer.build(t, patched)
			got := map[string]string{}
			for key, o := range after {
				c := o.template.Spec.Containers[0]
				h := jvm.HeapOf(&c)
				got[key] = h.Option
				limit := c.Resources.Limits[corev1.ResourceMemory]
				heap := h.Max
				if pct, ok := jvm.Percentage(h); ok {
					heap = resource.NewQuantity(int64(float64(limit.Value())*pct/100), resource.BinarySI)
				}
				if reach := jvm.Reach(*heap); reach.Cmp(limit) > 0 {
					t.Errorf("%s: %s under a %s limit reaches %s", key, h.Option, limit.String(), reach.String())
				}
				// Nothing else of the container changed.
				was, now := before[key].template.Spec.Containers[0], c
				was.Resources, now.Resources = corev1.ResourceRequirements{}, corev1.ResourceRequirements{}
				was.Command, was.Args, now.Command, now.Args = nil, nil, nil, nil
				for _, e := range []*[]corev1.EnvVar{&was.Env, &now.Env} {
					var kept []corev1.EnvVar
					for _, v := range *e {
						if !strings.HasSuffix(v.Name, "JAVA_OPTIONS") && v.Name != "JAVA_TOOL_OPTIONS" {
							kept = append(kept, v)
						}
					}
					*e = kept
				}
				if diff := cmp.Diff(was, now); diff != "" {
					t.Errorf("%s changed more than its resources and heap option (-base,+patched):\n%s", key, diff)
				}
			}
			if diff := cmp.Diff(wantHeap, got); diff != "" {
				t.Errorf("heap options (-want,+got):\n%s", diff)
			}
		})
	}
}

// The JSON report carries each running JVM's advice; the table says it in
// the reason.
func TestReportJVMAdvice(t *testing.T) {
	out, _ := runJVMs(t, "-o", "json")
	var list struct {
		Items []struct {
			Workload string `json:"workload"`
			JVM      *struct {
				Reason, Option, Suggested, Message string
			} `json:"jvm"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range list.Items {
		if it.JVM != nil {
			got[it.Workload] = it.JVM.Reason + " " + it.JVM.Option + " -> " + it.JVM.Suggested
		}
	}
	// The running pods, at their 2Gi, 2Gi, 4Gi and 1Gi limits.
	want := map[string]string{
		"cart":    "LimitAboveHeapReach -Xmx512m -> -Xmx768m",
		"orders":  "LimitAboveHeapReach -Xmx256m -> -Xmx1587m",
		"billing": "LimitAboveHeapReach  -> -XX:MaxRAMPercentage=77",
		"search":  "LimitAboveHeapReach -XX:MaxRAMPercentage=50.0 -> -XX:MaxRAMPercentage=78",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	table, _ := runJVMs(t, "-o", "table")
	if !strings.Contains(table, "JVM: memory limit 2Gi is 1664Mi above the JVM's heap's reach 384Mi") {
		t.Errorf("the table does not say orders' waste:\n%s", table)
	}
}

// -o diff writes the resources into the manifests and leaves the heap
// options to the patch, saying so.
func TestReportDiffLeavesJVMOptionsToThePatch(t *testing.T) {
	dir := filepath.Join(repoDir(t), "internal", "cli", "report", jvms, "manifests")
	diff, stderr := runJVMs(t, "-o", "diff", "--manifests", dir)
	if strings.Contains(diff, "Xmx1587m") || strings.Contains(diff, "MaxRAMPercentage=7") {
		t.Errorf("the diff writes a heap option:\n%s", diff)
	}
	if !strings.Contains(diff, "+          requests: {cpu: 200m, memory: 300Mi}") {
		t.Errorf("the diff does not size orders:\n%s", diff)
	}
	for _, want := range []string{
		"heap option of shop/deployment/orders not written into " + filepath.Join(dir, "jvms.yaml") + ": container app, -Xmx1587m: take it with -o patch",
		"heap option of shop/deployment/billing not written into " + filepath.Join(dir, "jvms.yaml") + ": container app, -XX:MaxRAMPercentage=77",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}
