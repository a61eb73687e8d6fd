//go:build e2e

package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/internal/manager"
	"github.com/tailorhq/tailor/test/cluster"
)

var (
	kubeconfig = flag.String("chaos.kubeconfig", cluster.Kubeconfig(), "admin kubeconfig of the local cluster")

	restConfig *rest.Config
	clientset  *kubernetes.Clientset
	// apiClient is uncached and knows tailor's types.
	apiClient client.Client
	// tailorBin is the tailor binary of this run: make e2e's
	// (TAILOR_E2E_BINARY), or built by TestMain.
	tailorBin string
	// root is the repository, for hack/.
	root string
)

func TestMain(m *testing.M) {
	flag.Parse()
	code, err := setUp(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setUp(m *testing.M) (int, error) {
	var err error
	if restConfig, clientset, err = cluster.Connect(*kubeconfig); err != nil {
		return 0, err
	}
	scheme, err := manager.Scheme()
	if err != nil {
		return 0, err
	}
	if apiClient, err = client.New(restConfig, client.Options{Scheme: scheme}); err != nil {
		return 0, err
	}
	if err := cluster.InstallCRDs(context.Background(), dynamic.NewForConfigOrDie(restConfig)); err != nil {
		return 0, fmt.Errorf("installing CRDs: %w", err)
	}
	_, this, _, _ := runtime.Caller(0)
	root = filepath.Join(filepath.Dir(this), "..", "..")
	dir, err := os.MkdirTemp("", "tailor-chaos-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	// make e2e has just built the tree's tailor: building it again here
	// costs the phase half a minute beside the benchmarks.
	if tailorBin = os.Getenv("TAILOR_E2E_BINARY"); tailorBin == "" {
		tailorBin = filepath.Join(dir, "tailor")
		build := exec.Command("go", "build", "-o", tailorBin, "./cmd/tailor")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("building tailor: %w\n%s", err, out)
		}
	}
	return m.Run(), nil
}

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := "chaos-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	return cluster.Namespace(t, clientset, strings.TrimRight(name, "-")+"-"+rand.String(5))
}
