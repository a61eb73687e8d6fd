package manager

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tailorhq/tailor/internal/agent/report"
	"github.com/tailorhq/tailor/internal/agentcert"
	agentsource "github.com/tailorhq/tailor/internal/metrics/agent"
	"github.com/tailorhq/tailor/internal/shard"
)

// DefaultAgentAddr is where a manager reading the node agents takes their
// reports.
const DefaultAgentAddr = ":8444"

// DefaultAgentServiceAccount is the agent's identity in the default
// install (namespace:name).
const DefaultAgentServiceAccount = "tailor-system:tailor-agent"

// The default install's names for the agents' TLS: the Service in front
// of the managers' report port (<namespace>/<name>; the certificate is
// made for its names, and the Secret and ConfigMap live in its
// namespace), the Secret holding the certificate and the ConfigMap where
// its CA bundle is published for the agents.
const (
	DefaultAgentService     = "tailor-system/tailor-manager-agents"
	DefaultAgentTLSSecret   = "tailor-agent-tls"
	DefaultAgentCAConfigMap = "tailor-agent-ca"
)

// agentReviewTTL is how long an agent token's review is reused (never past
// the token's expiry): how late a token whose pod was deleted is still
// taken. The kubelet rotates the agents' tokens hourly, and a stolen one
// reaches no further than its agent's node.
const agentReviewTTL = 5 * time.Minute

// Wake-ups are bounded twice: by the agents (a container wakes the manager
// at most once per cooldown, a node pushes at most once a second), and
// here, across every node, so a cluster-wide burst (every pod of a
// Deployment spiking at once on 500 nodes) costs at most wakeRate extra
// syncs a second, and the rest wait for their next sync as they would
// without an agent.
const (
	wakeRate   = 20
	wakeBurst  = 100
	wakeBuffer = 1024
)

// waker turns the pod UIDs of an urgent report into the pods the policy
// controller enqueues.
type waker struct {
	cache   client.Reader
	shard   shard.Shard
	limit   *rate.Limiter
	ch      chan event.GenericEvent
	results *prometheus.CounterVec
	log     logr.Logger
}

func newWaker(cache client.Reader, sh shard.Shard, log logr.Logger) *waker {
	w := &waker{
		cache: cache, shard: sh, limit: rate.NewLimiter(wakeRate, wakeBurst), log: log,
		ch: make(chan event.GenericEvent, wakeBuffer),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tailor_agent_wakeups_total",
			Help: "Pods an agent's urgent report asked to sync now, by result: queued, or dropped (over the manager's wake-up rate, or the queue full; they sync at their next period).",
		}, []string{"result"}),
	}
	if err := ctrlmetrics.Registry.Register(w.results); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			w.results = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	return w
}

// wake never blocks the report's handler: a standby replica's queue is
// not read until it leads, and a full one drops.
func (w *waker) wake(node string, uids []string) {
	var pods corev1.PodList
	if err := w.cache.List(context.Background(), &pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return
	}
	want := make(map[string]bool, len(uids))
	for _, u := range uids {
		want[u] = true
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !want[string(p.UID)] || !w.shard.Owns(p.Namespace) {
			continue
		}
		if !w.limit.Allow() {
			w.results.WithLabelValues("dropped").Inc()
			w.log.V(1).Info("wake-up dropped: over the manager's rate", "pod", client.ObjectKeyFromObject(p), "node", node)
			continue
		}
		select {
		case w.ch <- event.GenericEvent{Object: p}:
			w.results.WithLabelValues("queued").Inc()
			w.log.V(1).Info("woken by the agent", "pod", client.ObjectKeyFromObject(p), "node", node)
		default:
			w.results.WithLabelValues("dropped").Inc()
			w.log.V(1).Info("wake-up dropped: the queue is full", "pod", client.ObjectKeyFromObject(p), "node", node)
		}
	}
}

// agentUsername is the service account's user name in a TokenReview.
func agentUsername(sa string) (string, error) {
	ns, name, ok := strings.Cut(sa, ":")
	if !ok || ns == "" || name == "" || strings.Contains(name, ":") {
		return "", fmt.Errorf("agent service account %q: want <namespace>:<name>", sa)
	}
	return "system:serviceaccount:" + ns + ":" + name, nil
}

// newAgentReceiver builds the receiver of the agents' reports.
func newAgentReceiver(cs kubernetes.Interface, o Options) (*agentsource.Receiver, error) {
	sa := o.AgentServiceAccount
	if sa == "" {
		sa = DefaultAgentServiceAccount
	}
	user, err := agentUsername(sa)
	if err != nil {
		return nil, err
	}
	// A token is reviewed once per agentReviewTTL: 500 nodes cost the
	// apiserver under two TokenReviews a second, 5,000 under 17, within
	// the receiver's global limit of 50.
	auth := &agentsource.Authenticator{Reviewer: cs.AuthenticationV1().TokenReviews(), Username: user, Clock: clock.RealClock{}, TTL: agentReviewTTL}
	return agentsource.NewReceiver(auth, clock.RealClock{}, ctrl.Log.WithName("agent-reports"), ctrlmetrics.Registry), nil
}

// newAgentKeeper builds the keeper of the certificate the reports are
// served with.
func newAgentKeeper(cs kubernetes.Interface, o Options) (*agentcert.Keeper, error) {
	svc := cmp.Or(o.AgentService, DefaultAgentService)
	ns, name, ok := strings.Cut(svc, "/")
	if !ok || ns == "" || name == "" {
		return nil, fmt.Errorf("agent service %q: want <namespace>/<name>", svc)
	}
	return &agentcert.Keeper{
		Client: cs, Namespace: ns,
		Secret:    cmp.Or(o.AgentTLSSecret, DefaultAgentTLSSecret),
		ConfigMap: cmp.Or(o.AgentCAConfigMap, DefaultAgentCAConfigMap),
		DNSNames:  agentcert.DNSNames(name, ns), ServerName: report.ServerName(name, ns),
		Provided: o.AgentTLSProvided, Clock: clock.RealClock{}, Log: ctrl.Log.WithName("agent-tls"),
	}, nil
}

// serveAgents takes reports on addr until ctx ends, over TLS only, with the
// certificate getCert returns at each handshake.
func serveAgents(ctx context.Context, addr string, h http.Handler, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) error {
	mux := http.NewServeMux()
	mux.Handle(report.Path, h)
	srv := &http.Server{
		Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		// Both ends are tailor's: TLS 1.3 only. HTTP/2 is off, as on the
		// metrics endpoint, against its stream reset floods; a report is
		// one POST.
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: getCert, NextProtos: []string{"http/1.1"}},
		// Failed handshakes (a plain HTTP request, a scanner, an agent
		// without the CA yet) go to the debug log, not stderr.
		ErrorLog: log.New(logWriter{ctrl.Log.WithName("agent-reports").V(1)}, "", 0),
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for agent reports on %s: %w", addr, err)
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// logWriter writes each line of the standard library's logger to log.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info("agent report server", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}
