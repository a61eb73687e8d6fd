//go:build e2e

package crd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/cluster"
)

var (
	kubeconfig = flag.String("kubeconfig", envOr("TAILOR_KUBECONFIG", "/var/lib/tailor-dev/admin.kubeconfig"), "admin kubeconfig of the cluster to install the CRD into")

	policyGVR = v1alpha1.GroupVersion.WithResource("tailorpolicies")

	dyn        dynamic.Interface
	restClient rest.Interface
	namespace  string
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	flag.Parse()
	code, err := run(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crd: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return 0, fmt.Errorf("cannot load kubeconfig %s (is the cluster up? run hack/cluster.sh up): %w", *kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	dyn, err = dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	restClient = clientset.Discovery().RESTClient()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if err := cluster.InstallCRDs(ctx, dyn); err != nil {
		return 0, err
	}
	// Dry-run creates still pass namespace admission: the namespace must exist.
	ns, err := clientset.CoreV1().Namespaces().Create(ctx, cluster.NewNamespace("crd-"+rand.String(6), nil), metav1.CreateOptions{})
	if err != nil {
		return 0, fmt.Errorf("creating the test namespace: %w", err)
	}
	namespace = ns.Name
	defer func() {
		_ = clientset.CoreV1().Namespaces().Delete(context.Background(), namespace, metav1.DeleteOptions{})
	}()
	if err := waitServed(ctx); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// waitServed waits until the new version is served: Established comes a
// moment before the handler for a just-updated CRD answers.
func waitServed(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = dryRunCreate(ctx, policy(minimalSpec))
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the minimal policy is not accepted after installing the CRD: %w", errors.Join(err, last))
	}
	return nil
}

const minimalSpec = `
targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
`

// policy returns a TailorPolicy with the given spec, written as YAML so that
// tests can send what Go types cannot hold (a bad duration, a bare string
// quantity, an unknown field value).
func policy(specYAML string) *unstructured.Unstructured {
	var spec map[string]any
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		panic(fmt.Sprintf("test spec is not YAML: %v\n%s", err, specYAML))
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "TailorPolicy",
		"metadata":   map[string]any{"name": "p", "namespace": namespace},
		"spec":       spec,
	}}
}

func dryRunCreate(ctx context.Context, obj *unstructured.Unstructured) error {
	_, err := dyn.Resource(policyGVR).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// causes flattens a validation error into "field: message" lines, the way
// kubectl prints them.
func causes(err error) []string {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return []string{"not a validation error: " + err.Error()}
	}
	var out []string
	for _, c := range status.Status().Details.Causes {
		out = append(out, c.Field+": "+c.Message)
	}
	return out
}
