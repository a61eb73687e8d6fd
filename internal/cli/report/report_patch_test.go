package report

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	qosutil "k8s.io/kubectl/pkg/util/qos"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/cli/kube"
	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/internal/manifest"
	"github.com/tailorhq/tailor/internal/nsrules"
	"github.com/tailorhq/tailor/internal/resize"
	"github.com/tailorhq/tailor/test/builder"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/gitops from what the code prints")

// gitops is the testdata of the Git tests: manifests as a team keeps them
// (testdata/gitops/manifests), and golden outputs beside them.
const gitops = "testdata/gitops"

// gitopsFiles are the manifests kustomize builds; chart/ is a Helm
// template, which -o patch passes over with a warning.
var gitopsFiles = []string{"apps/web.yaml", "apps/db.yaml", "apps/agent.yaml", "apps/others.yaml", "batch/nightly.yaml"}

// gitopsCluster is the shop namespace as it runs the manifests: each
// workload, its pods created from its template, a bare pod, a CronJob's
// Job, and the policies whose recommendations the patches carry.
func gitopsCluster(t *testing.T) client.Client {
	t.Helper()
	yes := true
	owner := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(kind + "-" + name), Controller: &yes}}
	}
	var objs []client.Object
	pod := func(name string, tpl *corev1.PodTemplateSpec, refs []metav1.OwnerReference, labels map[string]string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{}, OwnerReferences: refs,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC))}, Spec: *tpl.Spec.DeepCopy()}
		for k, v := range tpl.Labels {
			p.Labels[k] = v
		}
		for k, v := range labels {
			p.Labels[k] = v
		}
		p.Spec.NodeName = "node-a"
		p.Status.Phase = corev1.PodRunning
		objs = append(objs, p)
	}
	for _, file := range gitopsFiles {
		data, err := os.ReadFile(filepath.Join(repoDir(t), "internal", "cli", "report", gitops, "manifests", file))
		if err != nil {
			t.Fatal(err)
		}
		found, err := manifest.Parse(file, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range found {
			meta := metav1.ObjectMeta{Namespace: "shop", Name: o.Ref.Name}
			tpl := o.Template
			switch o.Ref.Kind {
			case "Deployment":
				objs = append(objs, &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Template: *tpl}})
				replicas := 1
				if o.Ref.Name == "web" {
					replicas = 2
				}
				for i := range replicas {
					pod(fmt.Sprintf("%s-5d4b1-%d", o.Ref.Name, i), tpl, owner("apps/v1", "ReplicaSet", o.Ref.Name+"-5d4b1"), map[string]string{"pod-template-hash": "5d4b1"})
				}
			case "StatefulSet":
				objs = append(objs, &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Template: *tpl}})
				pod(o.Ref.Name+"-0", tpl, owner("apps/v1", "StatefulSet", o.Ref.Name), nil)
			case "DaemonSet":
				objs = append(objs, &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Template: *tpl}})
				pod(o.Ref.Name+"-x7k2p", tpl, owner("apps/v1", "DaemonSet", o.Ref.Name), nil)
			case "CronJob":
				cj := &batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: *tpl}}}}
				job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: o.Ref.Name + "-29000000", OwnerReferences: owner("batch/v1", "CronJob", o.Ref.Name)},
					Spec: batchv1.JobSpec{Template: *tpl}}
				// And the night before's run, still there: one patch, from
				// the newest run.
				older := job.DeepCopy()
				older.Name = o.Ref.Name + "-28998560"
				objs = append(objs, cj, job, older)
				pod(job.Name+"-q8n4m", tpl, owner("batch/v1", "Job", job.Name), nil)
				pod(older.Name+"-7fj2x", tpl, owner("batch/v1", "Job", older.Name), nil)
				objs[len(objs)-1].SetCreationTimestamp(metav1.NewTime(time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC)))
			default:
				t.Fatalf("%s: kind %s", file, o.Ref.Kind)
			}
		}
	}
	debug := builder.Pod("debug").Namespace("shop").Node("node-a").Container(builder.Container("sh").Requests("100m", "64Mi")).Running().Obj()
	objs = append(objs, debug)

	requestsOnly := v1alpha1.ControlledValuesRequestsOnly
	policy := func(name string, ref *v1alpha1.TargetRef, sel map[string]string, spec func(*v1alpha1.TailorPolicySpec), recs ...v1alpha1.RecommendedContainerResources) {
		p := &v1alpha1.TailorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: v1alpha1.TailorPolicySpec{TargetRef: ref, UpdatePolicy: &v1alpha1.UpdatePolicy{UpdateMode: v1alpha1.UpdateModeOff}}}
		if sel != nil {
			p.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
		}
		if spec != nil {
			spec(&p.Spec)
		}
		for i := range recs {
			recs[i].LowerBound = recs[i].Target
		}
		p.Status.Recommendation = &v1alpha1.Recommendation{ContainerRecommendations: recs}
		objs = append(objs, p)
	}
	rec := func(container, cpu, memory string) v1alpha1.RecommendedContainerResources {
		return v1alpha1.RecommendedContainerResources{ContainerName: container, Target: builder.List(cpu, memory)}
	}
	target := func(kind, name string) *v1alpha1.TargetRef {
		return &v1alpha1.TargetRef{APIVersion: "apps/v1", Kind: kind, Name: name}
	}
	// web, in mode Off: RequestsAndLimits (the default), its sidecar too.
	policy("web", target("Deployment", "web"), nil, nil, rec("app", "200m", "300Mi"), rec("proxy", "50m", "64Mi"))
	// db sizes requests only, in place; the recommendation is above its
	// limits, where the pod would become Guaranteed.
	policy("db", target("StatefulSet", "db"), nil, func(s *v1alpha1.TailorPolicySpec) {
		s.UpdatePolicy.UpdateMode = v1alpha1.UpdateModeInPlace
		s.ResourcePolicy = &v1alpha1.ResourcePolicy{ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "*", ControlledValues: &requestsOnly}}}
	}, rec("postgres", "3", "3Gi"))
	// agent has no limits, and one is never added; selected by label.
	policy("agents", nil, map[string]string{"app": "agent"}, nil, rec("agent", "50m", "100Mi"))
	policy("nightly", nil, map[string]string{"app": "nightly"}, nil, rec("job", "1", "512Mi"))
	policy("guaranteed", target("Deployment", "guaranteed"), nil, nil, rec("app", "200m", "128Mi"))
	policy("same", target("Deployment", "same"), nil, nil, rec("app", "200m", "128Mi"))

	scheme, err := manager.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

// runGitops runs `tailor report` on the gitops cluster, from inside
// testdata/gitops/manifests when --manifests is given (as a team runs it
// in its repository), and returns stdout and stderr.
func runGitops(t *testing.T, args ...string) (string, string) {
	t.Helper()
	if strings.Contains(strings.Join(args, " "), "--manifests") {
		t.Chdir(filepath.Join(repoDir(t), "internal", "cli", "report", gitops, "manifests"))
	}
	return runGitopsHere(t, args...)
}

// runGitopsHere is runGitops in the test's working directory.
func runGitopsHere(t *testing.T, args ...string) (string, string) {
	t.Helper()
	return runReportOn(t, gitopsCluster(t), args...)
}

// runReportOn runs tailor report with args against c, in namespace shop,
// at a fixed time and server version, and returns what it wrote to stdout
// and stderr; an error fails the test.
func runReportOn(t *testing.T, c client.Client, args ...string) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &ReportOptions{
		configFlags: genericclioptions.NewConfigFlags(false),
		streams:     genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		now:         func() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) },
		clients:     &kube.Clients{Namespace: "shop"},
		client:      c,
		server:      &resize.Version{Major: 1, Minor: 37},
	}
	cmd := o.command()
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("report %v: %v\nstderr:\n%s", args, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// golden compares got with testdata/gitops/name, or rewrites it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(repoDir(t), "internal", "cli", "report", gitops, name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want,+got):\n%s", name, diff)
	}
}

// repoDir is the repository's root, whatever the test's directory.
func repoDir(t *testing.T) string {
	t.Helper()
	_, this, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test source")
	}
	return filepath.Join(filepath.Dir(this), "..", "..", "..")
}

// wantRendered is each workload's containers after the patches, as
// "name requests=... limits=...": the recommendation as the policy shapes
// it, and what no patch touches as it was.
var wantRendered = map[string][]string{
	// RequestsAndLimits: the limits keep their ratio (2x); the sidecar's
	// memory is at its recommendation already; migrate runs before the
	// others and is not sized.
	"Deployment/web": {"app requests=cpu:200m,memory:300Mi limits=cpu:400m,memory:600Mi",
		"init migrate requests=cpu:1,memory:1Gi limits=", "init proxy requests=cpu:50m,memory:64Mi limits=cpu:100m,memory:128Mi"},
	// RequestsOnly keeps the limits, and the requests stop just below them:
	// at them the pod would be Guaranteed, not Burstable.
	"StatefulSet/db": {"postgres requests=cpu:1999m,memory:2047Mi limits=cpu:2,memory:2Gi"},
	// No limit is added.
	"DaemonSet/agent": {"agent requests=cpu:50m,memory:100Mi limits="},
	// A CronJob's template, found from its Job's pods.
	"CronJob/nightly": {"job requests=cpu:1,memory:512Mi limits="},
	// Requests defaulted from the limits: Guaranteed, both move.
	"Deployment/guaranteed": {"app requests=cpu:200m,memory:128Mi limits=cpu:200m,memory:128Mi"},
	"Deployment/same":       {"app requests=cpu:200m,memory:128Mi limits="},
	"Deployment/nopolicy":   {"app requests=cpu:300m limits="},
}

// The patches, taken through kustomize (in-process, and kubectl kustomize
// when a kubectl is found), give each workload's template the
// recommendation as the policy shapes it and change nothing else; the
// diff of the manifests, applied with git, gives the same templates
// except where it has to leave a workload to the patch.
func TestReportPatchGolden(t *testing.T) {
	patch, stderr := runGitops(t, "-o", "patch", "--manifests", ".")
	golden(t, "patch.yaml", patch)
	wantStderr := []string{
		"warning: passed over chart/templates/web.yaml: yaml: line 3: did not find expected key",
		"skipped shop/cronjob/nightly: planned from its newest run, Job nightly-29000000: Job nightly-28998560 is older",
		"skipped shop/pod/debug: a pod without a controller has no template: change the manifest that creates it, or resize it in place (tailor resize)",
		"skipped shop/deployment/nopolicy: no recommendation: app: no policy and no usage history: give a metrics history (--prometheus-url) or a TailorPolicy in mode Off",
		"skipped shop/deployment/same: nothing to change: the template already asks for the recommendation",
	}
	if diff := cmp.Diff(wantStderr, lines(stderr)); diff != "" {
		t.Errorf("stderr (-want,+got):\n%s", diff)
	}

	// The base as the team builds it, and an overlay of it with the patch.
	root := t.TempDir()
	copyManifests(t, filepath.Join(root, "base"))
	writeKustomization(t, filepath.Join(root, "base"), "namespace: shop\nresources:\n"+listYAML(gitopsFiles))
	if err := os.MkdirAll(filepath.Join(root, "patched"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "patched", "tailor.yaml"), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	// The patches name no namespace where the manifests name none, so they
	// match before the base's namespace is set.
	writeKustomization(t, filepath.Join(root, "patched"), "resources:\n- ../base\npatches:\n- path: tailor.yaml\n")

	base := render(t, filepath.Join(root, "base"))
	for _, renderer := range renderers(t) {
		t.Run(renderer.name, func(t *testing.T) {
			patched := renderer.build(t, filepath.Join(root, "patched"))
			checkRendered(t, base, patched)
		})
	}

	// -o diff: the same values, in the files, except guaranteed's
	// requests, which its manifest leaves to the apiserver.
	diff, stderr := runGitops(t, "-o", "diff", "--manifests", ".")
	golden(t, "manifests.diff", diff)
	if want := "skipped shop/deployment/guaranteed: apps/others.yaml:2: container app has no resources.requests.cpu in the manifest to replace: take this one with -o patch"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("no git on PATH: the diff is not applied")
		return
	}
	edited := filepath.Join(root, "edited")
	copyManifests(t, edited)
	writeKustomization(t, edited, "namespace: shop\nresources:\n"+listYAML(gitopsFiles))
	apply := exec.Command("git", "apply", "--verbose", "-")
	apply.Dir, apply.Stdin = edited, strings.NewReader(diff)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	got := summary(render(t, edited))
	want := render(t, filepath.Join(root, "patched"))
	want["Deployment/guaranteed"] = base["Deployment/guaranteed"]
	if d := cmp.Diff(summary(want), got); d != "" {
		t.Errorf("manifests with the diff applied against the base with the patches (-want,+got):\n%s", d)
	}
	// The edited manifests need nothing more but what the diff left to
	// the patch.
	t.Chdir(edited)
	again, _ := runGitopsHere(t, "-o", "patch", "--manifests", ".")
	if docs := strings.Count(again, "\nkind: "); docs != 1 || !strings.Contains(again, "name: guaranteed") {
		t.Errorf("the edited manifests still need patches:\n%s", again)
	}
}

// Without --manifests the templates are the cluster's, and each patch names
// the workload's namespace.
func TestReportPatchFromCluster(t *testing.T) {
	patch, stderr := runGitops(t, "-o", "patch")
	golden(t, "patch-cluster.yaml", patch)
	if strings.Contains(stderr, "warning") || !strings.Contains(stderr, "skipped shop/pod/debug") {
		t.Errorf("stderr:\n%s", stderr)
	}
	// The manifests with their namespace set first, as the cluster has
	// them, then the patch.
	root := t.TempDir()
	copyManifests(t, filepath.Join(root, "base"))
	writeKustomization(t, filepath.Join(root, "base"), "namespace: shop\nresources:\n"+listYAML(gitopsFiles))
	if err := os.MkdirAll(filepath.Join(root, "patched"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "patched", "tailor.yaml"), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	writeKustomization(t, filepath.Join(root, "patched"), "resources:\n- ../base\npatches:\n- path: tailor.yaml\n")
	base := render(t, filepath.Join(root, "base"))
	for _, renderer := range renderers(t) {
		t.Run(renderer.name, func(t *testing.T) {
			checkRendered(t, base, renderer.build(t, filepath.Join(root, "patched")))
		})
	}
}

// checkRendered compares each workload's containers with wantRendered,
// and everything else, and each template's QoS class, with the base.
func checkRendered(t *testing.T, base, patched map[string]renderedObject) {
	t.Helper()
	got := map[string][]string{}
	for key, o := range patched {
		if o.template == nil {
			continue
		}
		got[key] = containersOf(o.template)
		if was, now := admittedQoS(base[key].template), admittedQoS(o.template); was != now {
			t.Errorf("%s: QoS class %s -> %s", key, was, now)
		}
	}
	if diff := cmp.Diff(wantRendered, got); diff != "" {
		t.Errorf("rendered containers (-want,+got):\n%s", diff)
	}
	// Nothing but the resources changed.
	strip := func(m map[string]renderedObject) map[string]string {
		out := map[string]string{}
		for k, o := range m {
			out[k] = o.withoutResources
		}
		return out
	}
	if diff := cmp.Diff(strip(base), strip(patched)); diff != "" {
		t.Errorf("the patches changed more than resources (-base,+patched):\n%s", diff)
	}
}

// admittedQoS is the QoS class of a pod created from tpl, its requests
// defaulted from its limits as the apiserver does.
func admittedQoS(tpl *corev1.PodTemplateSpec) corev1.PodQOSClass {
	return qosutil.ComputePodQOS((&nsrules.Rules{}).Admitted(&corev1.Pod{Spec: tpl.Spec}))
}

// summary is each rendered object's containers and the rest of it.
func summary(m map[string]renderedObject) map[string]string {
	out := map[string]string{}
	for k, o := range m {
		out[k] = strings.Join(containersOf(o.template), "\n") + "\n" + o.withoutResources
	}
	return out
}

func containersOf(tpl *corev1.PodTemplateSpec) []string {
	text := func(l corev1.ResourceList) string {
		var parts []string
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := l[r]; ok {
				parts = append(parts, fmt.Sprintf("%s:%s", r, q.String()))
			}
		}
		return strings.Join(parts, ",")
	}
	var out []string
	for _, c := range tpl.Spec.Containers {
		out = append(out, fmt.Sprintf("%s requests=%s limits=%s", c.Name, text(c.Resources.Requests), text(c.Resources.Limits)))
	}
	for _, c := range tpl.Spec.InitContainers {
		out = append(out, fmt.Sprintf("init %s requests=%s limits=%s", c.Name, text(c.Resources.Requests), text(c.Resources.Limits)))
	}
	sort.Strings(out)
	return out
}

type renderedObject struct {
	template *corev1.PodTemplateSpec
	// withoutResources is the object's YAML with every resources field
	// cleared.
	withoutResources string
}

// renderedObjects reads kustomize's output, by kind/name.
func renderedObjects(t *testing.T, yaml []byte) map[string]renderedObject {
	t.Helper()
	found, err := manifest.Parse("rendered", yaml)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]renderedObject{}
	for _, o := range found {
		if o.Ref.Namespace != "shop" {
			t.Errorf("%s rendered in namespace %q", o.Ref, o.Ref.Namespace)
		}
		stripped := o.Template.DeepCopy()
		for _, cs := range [][]corev1.Container{stripped.Spec.Containers, stripped.Spec.InitContainers} {
			for i := range cs {
				cs[i].Resources = corev1.ResourceRequirements{}
			}
		}
		out[o.Ref.Kind+"/"+o.Ref.Name] = renderedObject{template: o.Template, withoutResources: fmt.Sprintf("%+v", stripped)}
	}
	return out
}

type renderer struct {
	name  string
	build func(t *testing.T, dir string) map[string]renderedObject
}

// render builds dir with kustomize's library.
func render(t *testing.T, dir string) map[string]renderedObject {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	y, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return renderedObjects(t, y)
}

// renderers are kustomize's library, and kubectl kustomize when a kubectl
// is found: TAILOR_KUBECTL, the one hack/cluster.sh builds into the
// cache, or kubectl on PATH.
func renderers(t *testing.T) []renderer {
	out := []renderer{{"kustomize library", render}}
	kubectl := os.Getenv("TAILOR_KUBECTL")
	if kubectl == "" {
		cache := os.Getenv("TAILOR_CACHE")
		if cache == "" {
			if dir, err := os.UserCacheDir(); err == nil {
				cache = filepath.Join(dir, "tailor")
			}
		}
		if found, _ := filepath.Glob(filepath.Join(cache, "kubernetes", "*", "bin", "kubectl")); len(found) > 0 {
			kubectl = found[len(found)-1]
		} else if p, err := exec.LookPath("kubectl"); err == nil {
			kubectl = p
		}
	}
	if kubectl == "" {
		t.Log("no kubectl found (TAILOR_KUBECTL, the cache of hack/cluster.sh, PATH): kubectl kustomize is not run")
		return out
	}
	return append(out, renderer{"kubectl kustomize", func(t *testing.T, dir string) map[string]renderedObject {
		t.Helper()
		cmd := exec.Command(kubectl, "kustomize", dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		y, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s kustomize %s: %v\n%s", kubectl, dir, err, stderr.String())
		}
		return renderedObjects(t, y)
	}})
}

func copyManifests(t *testing.T, to string) {
	t.Helper()
	for _, f := range gitopsFiles {
		data, err := os.ReadFile(filepath.Join(repoDir(t), "internal", "cli", "report", gitops, "manifests", f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(to, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func writeKustomization(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func listYAML(items []string) string {
	var b strings.Builder
	for _, i := range items {
		b.WriteString("- " + i + "\n")
	}
	return b.String()
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
