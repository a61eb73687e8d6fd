//go:build e2e

package deploy

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/tailorhq/tailor/test/cluster"
)

// releaseImage is the repository make release names its image after, which
// the packaged chart installs by default.
const releaseImage = "ghcr.io/tailorhq/tailor"

// TestReleaseInstallsOnTheCluster installs a release the way its notes tell
// a platform team to: the OCI image archive imported into the node's
// containerd as it is, the packaged chart installed with helm at its
// defaults but for the namespace it watches. The manager must run exactly
// the released image (its tag and digest), say the version it was built as,
// resize a pod in place under the chart's RBAC, and leave nothing behind
// when the release is uninstalled. hack/e2e.sh builds the release at a test
// version (make release) and names it in TAILOR_RELEASE_DIST and
// TAILOR_RELEASE_VERSION.
func TestReleaseInstallsOnTheCluster(t *testing.T) {
	cluster.Shared(t)
	dist, version := os.Getenv("TAILOR_RELEASE_DIST"), os.Getenv("TAILOR_RELEASE_VERSION")
	if dist == "" || version == "" {
		t.Skip("TAILOR_RELEASE_DIST and TAILOR_RELEASE_VERSION are not set: hack/e2e.sh builds a release and sets them")
	}
	helmBin := helm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	archive := filepath.Join(dist, "tailor-"+version+"-image.oci.tar")
	releasedID := imageID(t, archive)
	ref := releaseImage + ":" + version
	run(t, "ctr", "--address", "/run/containerd/containerd.sock", "-n", "k8s.io", "images", "import", archive)
	t.Cleanup(func() {
		// After the uninstall (cleanups run last first): no pod uses it.
		_ = exec.Command("ctr", "--address", "/run/containerd/containerd.sock", "-n", "k8s.io", "images", "rm", ref).Run()
	})
	charts, err := filepath.Glob(filepath.Join(dist, "tailor-*.tgz"))
	if err != nil || len(charts) != 1 {
		t.Fatalf("want one packaged chart in %s, got %v (%v)", dist, charts, err)
	}

	if err := cluster.InstallCRDs(ctx, dyn); err != nil {
		t.Fatal(err)
	}
	host, port, err := cluster.APIServerEndpoint(ctx, clientset)
	if err != nil {
		t.Fatal(err)
	}
	id := rand.String(5)
	namespace := cluster.Namespace(t, clientset, "release-"+id)
	work := cluster.Namespace(t, clientset, "release-work-"+id)
	release := "rel-" + id
	env, _ := json.Marshal([]map[string]string{
		{"name": "KUBERNETES_SERVICE_HOST", "value": host},
		{"name": "KUBERNETES_SERVICE_PORT", "value": port},
	})
	watch, _ := json.Marshal([]string{work})
	// Only what this node needs: the dev cluster has no kube-proxy (see
	// TestManagerInCluster), shares the node with the shared phase's other
	// tests (a small request, its own namespace watched) and is in a hurry.
	run(t, helmBin, "install", release, charts[0], "--kubeconfig", *kubeconfig, "--namespace", namespace,
		"--wait", "--timeout", "3m",
		"--set-json", "extraEnv="+string(env),
		"--set-json", "watchNamespaces="+string(watch),
		"--set", "syncPeriod=2s",
		"--set", "resources.requests.cpu=10m")
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_ = exec.Command(helmBin, "uninstall", release, "--kubeconfig", *kubeconfig, "--namespace", namespace, "--wait").Run()
		}
	})

	manager := waitManagerReady(ctx, t, namespace)
	if got := manager.Spec.Containers[0].Image; got != ref {
		t.Errorf("manager runs image %s, want the release's %s", got, ref)
	}
	if got := manager.Status.ContainerStatuses[0].ImageID; got != releasedID && !strings.HasSuffix(got, "@"+releasedID) {
		t.Errorf("manager's image ID %s is not the released image's %s", got, releasedID)
	}
	log := managerLog(t, namespace, manager.Name)
	if !strings.Contains(log, "starting the manager") || !strings.Contains(log, `"version":"`+version+`"`) {
		t.Errorf("the manager does not say it is %s:\n%s", version, log)
	}
	owned := releaseObjects(ctx, t, release)
	if len(owned) == 0 {
		t.Fatalf("no cluster-scoped object is labelled app.kubernetes.io/instance=%s", release)
	}
	t.Logf("release %s installed: manager %s on %s, cluster-scoped %v", release, manager.Name, ref, owned)

	// The chart's RBAC, proven by use: a throttled pod raised in place.
	got, _ := raisedInPlace(ctx, t, work, namespace, manager.Name, hotPod{burn: "200m", memory: "16Mi",
		requests: [2]string{"10m", "32Mi"}, limits: [2]string{"50m", "64Mi"}, maxCPU: "100m"})
	if n := got.Status.ContainerStatuses[0].RestartCount; n != 0 {
		t.Errorf("the raise restarted the container %d times", n)
	}
	t.Logf("cpu limit raised in place to %s by the released manager", got.Spec.Containers[0].Resources.Limits.Cpu())
	if log := managerLog(t, namespace, manager.Name); strings.Contains(log, "forbidden") {
		t.Errorf("the manager was refused something the chart's RBAC should grant:\n%s", log)
	}

	run(t, helmBin, "uninstall", release, "--kubeconfig", *kubeconfig, "--namespace", namespace, "--wait", "--timeout", "2m")
	uninstalled = true
	if left := releaseObjects(ctx, t, release); len(left) > 0 {
		t.Errorf("helm uninstall left cluster-scoped objects: %v", left)
	}
	pods, err := clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("pod %s still runs after the uninstall", p.Name)
		}
	}
}

// imageID is the ID of the archive's image for this machine's platform: the
// digest of its config, which is what containerd's CRI reports as the
// container's image ID for an image that came from no registry (it has no
// repository digest). The archive is an OCI layout whose index names an
// image index, one manifest per platform.
func imageID(t *testing.T, archive string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	// The JSON documents only: the layers are megabytes.
	docs := map[string][]byte{}
	r := tar.NewReader(f)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Size > 1<<16 {
			continue
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Clean(h.Name)] = b
	}
	type descriptor struct {
		Digest   string `json:"digest"`
		Platform *struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	}
	var doc struct {
		Manifests []descriptor `json:"manifests"`
		Config    descriptor   `json:"config"`
	}
	read := func(name string) {
		t.Helper()
		doc.Manifests, doc.Config = nil, descriptor{}
		if err := json.Unmarshal(docs[name], &doc); err != nil {
			t.Fatalf("%s in %s: %v", name, archive, err)
		}
	}
	blob := func(digest string) string { return filepath.Join("blobs", strings.Replace(digest, ":", "/", 1)) }
	read("index.json")
	if len(doc.Manifests) != 1 {
		t.Fatalf("%s index.json names %d images, want 1", archive, len(doc.Manifests))
	}
	read(blob(doc.Manifests[0].Digest))
	for _, m := range doc.Manifests {
		if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
			read(blob(m.Digest))
			if doc.Config.Digest == "" {
				t.Fatalf("%s: the linux/%s manifest names no config", archive, runtime.GOARCH)
			}
			return doc.Config.Digest
		}
	}
	t.Fatalf("%s has no linux/%s image", archive, runtime.GOARCH)
	return ""
}

// releaseObjects names the cluster-scoped objects helm installed for the
// release (by the chart's app.kubernetes.io/instance label).
func releaseObjects(ctx context.Context, t *testing.T, release string) []string {
	t.Helper()
	var names []string
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"},
	} {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
		if err != nil {
			t.Fatalf("listing %s: %v", gvr.Resource, err)
		}
		for _, o := range list.Items {
			names = append(names, gvr.Resource+"/"+o.GetName())
		}
	}
	return names
}

// run runs a command the test needs to succeed, failing with its output.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
