package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/tailorhq/tailor/internal/agent/report"
)

// Receiver takes the agents' reports (report.Path) and keeps the newest
// of each node.
type Receiver struct {
	Auth  *Authenticator
	Clock clock.PassiveClock
	Log   logr.Logger
	// Wake is called, outside any lock, with the UIDs of the pods whose
	// containers made a report urgent.
	Wake func(node string, podUIDs []string)
	// PerNode bounds each node's pushes: an agent pushes at most once a
	// second by design, so a faster one is broken or not an agent.
	PerNode rate.Limit

	// A report whose token has no remembered answer (Authenticator.Cached)
	// costs a TokenReview, one write to the apiserver. It gets one only
	// within these limits, checked before the review, so that no pod can
	// turn garbage tokens into apiserver load: PerSource (bursts of
	// PerSourceBurst) per remote address, Reviews across all of them, and
	// at most MaxReviewing in flight. An agent needs one review per token
	// per Authenticator.TTL; over the limits a report is refused (429)
	// and its agent pushes again at its next interval.
	PerSource      rate.Limit
	PerSourceBurst int
	Reviews        *rate.Limiter
	MaxReviewing   int

	mu        sync.Mutex
	nodes     map[string]*nodeReport
	limits    map[string]*rate.Limiter
	sources   map[string]*sourceLimit
	overflow  *rate.Limiter
	reviewing int
	pruned    time.Time
	swept     time.Time
	metrics   receiverMetrics
}

// sourceLimit is a remote address's review limiter, and when it last asked.
type sourceLimit struct {
	limit *rate.Limiter
	seen  time.Time
}

// maxSources bounds the remote addresses given a limiter of their own;
// past it, until idle ones are forgotten, new ones share one.
const maxSources = 4096

// forgetAfter is how long a node's last report is kept: long past any
// freshness a source allows, so nothing in use is dropped.
const forgetAfter = 5 * time.Minute

// nodeReport is a node's newest report, indexed by container ID.
type nodeReport struct {
	at         time.Time
	containers map[string]report.Container
}

type receiverMetrics struct {
	reports *prometheus.CounterVec
}

// NewReceiver returns a Receiver; reg (nil: none) gets its metrics.
func NewReceiver(auth *Authenticator, clk clock.PassiveClock, log logr.Logger, reg prometheus.Registerer) *Receiver {
	r := &Receiver{
		Auth: auth, Clock: clk, Log: log, PerNode: rate.Limit(2),
		PerSource: rate.Limit(1), PerSourceBurst: 5, Reviews: rate.NewLimiter(50, 100), MaxReviewing: 16,
		nodes: map[string]*nodeReport{}, limits: map[string]*rate.Limiter{}, sources: map[string]*sourceLimit{},
		metrics: receiverMetrics{reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tailor_agent_reports_total",
			Help: "Node agent reports received, by result: ok, urgent, unauthenticated, forbidden, throttled, invalid.",
		}, []string{"result"})},
	}
	if reg != nil {
		// Several managers in one process (the tests) share the counter.
		if err := reg.Register(r.metrics.reports); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				r.metrics.reports = are.ExistingCollector.(*prometheus.CounterVec)
			}
		}
	}
	return r
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST a report", http.StatusMethodNotAllowed)
		return
	}
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		r.refuse(w, "unauthenticated", http.StatusUnauthorized, "no bearer token")
		return
	}
	node, known, err := r.Auth.Cached(token)
	if !known {
		if why := r.admitReview(req.RemoteAddr); why != "" {
			r.refuse(w, "throttled", http.StatusTooManyRequests, why)
			return
		}
		node, err = r.Auth.Node(req.Context(), token)
		r.doneReviewing()
	}
	var transient transientError
	switch {
	case errors.As(err, &transient):
		r.refuse(w, "error", http.StatusServiceUnavailable, err.Error())
		return
	case errors.Is(err, errNotAgent):
		r.refuse(w, "forbidden", http.StatusForbidden, err.Error())
		return
	case err != nil:
		r.refuse(w, "unauthenticated", http.StatusUnauthorized, err.Error())
		return
	}
	if !r.limiter(node).AllowN(r.Clock.Now(), 1) {
		r.refuse(w, "throttled", http.StatusTooManyRequests, fmt.Sprintf("node %s reports more often than %v a second", node, r.PerNode))
		return
	}
	var rep report.Report
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, report.MaxBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		r.refuse(w, "invalid", http.StatusBadRequest, "report: "+err.Error())
		return
	}
	if err := rep.Validate(); err != nil {
		r.refuse(w, "invalid", http.StatusBadRequest, "report: "+err.Error())
		return
	}
	urgent := r.put(node, &rep)
	w.WriteHeader(http.StatusNoContent)
	if len(urgent) > 0 && r.Wake != nil {
		r.metrics.reports.WithLabelValues("urgent").Inc()
		r.Wake(node, urgent)
		return
	}
	r.metrics.reports.WithLabelValues("ok").Inc()
}

func (r *Receiver) refuse(w http.ResponseWriter, result string, code int, msg string) {
	r.metrics.reports.WithLabelValues(result).Inc()
	r.Log.V(1).Info("agent report refused", "status", code, "why", msg)
	http.Error(w, msg, code)
}

// admitReview says why a report from remote (host:port) may not have its
// token reviewed now, or "" when it may; then doneReviewing must follow
// the review.
func (r *Receiver) admitReview(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	now := r.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reviewing >= r.MaxReviewing {
		return "too many token reviews in flight"
	}
	if !r.sourceLimiter(host, now).AllowN(now, 1) {
		return fmt.Sprintf("%s asks for token reviews more often than %v a second", host, r.PerSource)
	}
	if !r.Reviews.AllowN(now, 1) {
		return "too many token reviews across all agents"
	}
	r.reviewing++
	return ""
}

func (r *Receiver) doneReviewing() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reviewing--
}

// sourceLimiter is host's review limiter; r.mu is held. Addresses idle
// for a minute (their limiter long refilled, so nothing is lost) are
// forgotten when the map is full, at most once a second; until then new
// addresses share the overflow limiter.
func (r *Receiver) sourceLimiter(host string, now time.Time) *rate.Limiter {
	if s := r.sources[host]; s != nil {
		s.seen = now
		return s.limit
	}
	if len(r.sources) >= maxSources && now.Sub(r.swept) >= time.Second {
		r.swept = now
		for h, s := range r.sources {
			if now.Sub(s.seen) >= time.Minute {
				delete(r.sources, h)
			}
		}
	}
	if len(r.sources) >= maxSources {
		if r.overflow == nil {
			r.overflow = rate.NewLimiter(r.PerSource, r.PerSourceBurst)
		}
		return r.overflow
	}
	s := &sourceLimit{limit: rate.NewLimiter(r.PerSource, r.PerSourceBurst), seen: now}
	r.sources[host] = s
	return s.limit
}

func (r *Receiver) limiter(node string) *rate.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.limits[node]
	if l == nil {
		l = rate.NewLimiter(r.PerNode, 3)
		r.limits[node] = l
	}
	return l
}

// put replaces node's report and returns the UIDs of the pods with an
// urgent container.
func (r *Receiver) put(node string, rep *report.Report) []string {
	nr := &nodeReport{at: r.Clock.Now(), containers: make(map[string]report.Container, len(rep.Containers))}
	var urgent []string
	seen := map[string]bool{}
	for _, c := range rep.Containers {
		nr.containers[c.ID] = c
		if c.Urgent != "" && !seen[c.PodUID] {
			seen[c.PodUID] = true
			urgent = append(urgent, c.PodUID)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes[node] = nr
	// A node that stopped reporting (gone from the cluster, or its agent
	// removed) is dropped, not kept for ever; checked once a minute.
	if nr.at.Sub(r.pruned) > time.Minute {
		for n, old := range r.nodes {
			if nr.at.Sub(old.at) > forgetAfter {
				delete(r.nodes, n)
				delete(r.limits, n)
			}
		}
		r.pruned = nr.at
	}
	return urgent
}

// node returns node's newest report and when it came (nil: none).
func (r *Receiver) node(node string) *nodeReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nodes[node]
}
