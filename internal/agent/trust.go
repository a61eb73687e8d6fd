package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/cert"

	"github.com/tailorhq/tailor/internal/agent/report"
)

// Trust is the CA bundle the agent checks the managers' certificate
// against, and the HTTP client built on it. Until a bundle is set there is
// no client, and so no push: the agent never sends its token over plain
// HTTP, nor to a server it has not verified.
type Trust struct {
	serverName string
	timeout    time.Duration

	mu     sync.Mutex
	bundle []byte
	client *http.Client
}

// NewTrust returns a Trust with no bundle yet. serverName is the name the
// managers' certificate must carry (report.ServerName: the agent dials
// their addresses, not that name); "" checks each URL's own host.
// timeout bounds each push.
func NewTrust(serverName string, timeout time.Duration) *Trust {
	return &Trust{serverName: serverName, timeout: timeout}
}

// errNoCA is a push with no CA bundle to check the managers by.
var errNoCA = errors.New("no CA bundle to check the managers' certificate against yet")

// Client is the HTTP client that trusts the current bundle, or errNoCA.
func (t *Trust) Client() (*http.Client, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.client == nil {
		return nil, errNoCA
	}
	return t.client, nil
}

// SetBundle trusts the CAs of bundle (PEM) from now on, in place of those
// before, and says whether that changed anything. A bundle with no
// certificate is refused, and the one before kept.
func (t *Trust) SetBundle(bundle []byte) (bool, error) {
	pool, err := cert.NewPoolFromBytes(bundle)
	if err != nil {
		return false, fmt.Errorf("the managers' CA bundle: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.client != nil && bytes.Equal(bundle, t.bundle) {
		return false, nil
	}
	old := t.client
	t.bundle = bytes.Clone(bundle)
	t.client = &http.Client{
		Timeout: t.timeout,
		Transport: &http.Transport{
			// The managers are dialled at their pod addresses: no proxy
			// is to see the token.
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: t.timeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:     &tls.Config{RootCAs: pool, ServerName: t.serverName, MinVersion: tls.VersionTLS13},
			TLSHandshakeTimeout: t.timeout,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
		},
		// A redirect could lead the token elsewhere, even to plain HTTP
		// on the same host: none is followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if old != nil {
		old.CloseIdleConnections()
	}
	return true, nil
}

// WatchManagerCA follows ConfigMap name of namespace, where the managers
// publish their CA bundle (report.CABundleKey), and sets each new bundle
// on t. One ConfigMap, by name: the agent needs get, list and watch on it
// alone. A ConfigMap deleted leaves t as it was: the managers publish it
// again, and their certificate has not changed for that.
func WatchManagerCA(ctx context.Context, cs kubernetes.Interface, namespace, name string, t *Trust, log logr.Logger) error {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sel }))
	set := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		changed, err := t.SetBundle([]byte(cm.Data[report.CABundleKey]))
		switch {
		case err != nil:
			log.Error(err, "the managers' CA bundle is unusable; keeping the one before, if any", "configMap", namespace+"/"+name)
		case changed:
			log.Info("checking the managers' certificate against their CA bundle", "configMap", namespace+"/"+name, "resourceVersion", cm.ResourceVersion)
		}
	}
	if _, err := f.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	return nil
}
