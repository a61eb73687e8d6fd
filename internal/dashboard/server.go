package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/amount"
	"github.com/tailorhq/tailor/internal/price"
	"github.com/tailorhq/tailor/internal/shard"
)

// The dashboard reads the events of a policy and its pods; it writes
// nothing.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=list

//go:embed static
var static embed.FS

// Server serves the dashboard: the pages, and the JSON they are drawn from.
type Server struct {
	// Cache is the manager's cached client: policies, pods and nodes are
	// read from memory, never listed from the apiserver per request.
	Cache client.Reader
	// Events lists a policy's recent events (they are not cached); nil
	// leaves them out.
	Events  client.Reader
	History *History
	Clock   clock.PassiveClock
	// Shard is the manager's share of the namespaces: another shard's
	// policies are that shard's manager's to show, with the history only
	// it has; a scoped manager's cache holds no policy of another
	// namespace.
	Shard shard.Shard
	// Prices put a monthly cost on requests, before tailor and now, each
	// pod at its node's (a node's prices.tailor.dev annotations or labels
	// override them); ExamplePrices says they are price.Example, which the
	// pages say.
	Prices        price.Prices
	ExamplePrices bool
}

// Handler routes the pages and the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	shell := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		http.ServeFileFS(w, r, files, "index.html")
	}
	mux.HandleFunc("GET /{$}", shell)
	mux.HandleFunc("GET /cluster", shell)
	mux.HandleFunc("GET /workload/{namespace}/{name}", shell)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(files)))
	mux.HandleFunc("GET /api/overview", s.serve(s.overview))
	mux.HandleFunc("GET /api/workload/{namespace}/{name}", s.serve(s.workload))
	mux.HandleFunc("GET /api/cluster", s.serve(s.cluster))
	return securityHeaders(mux)
}

// securityHeaders keep the pages to their own origin: no framing, no
// scripts or styles from elsewhere (everything is embedded).
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func (s *Server) serve(f func(ctx context.Context, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		v, err := f(ctx, r)
		if err != nil {
			code := http.StatusInternalServerError
			var he *httpError
			if errors.As(err, &he) {
				code = he.code
			} else {
				log.FromContext(ctx).Error(err, "dashboard request", "path", r.URL.Path)
			}
			http.Error(w, err.Error(), code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		_ = enc.Encode(v)
	}
}

// Serve runs the dashboard on addr until ctx ends.
func (s *Server) Serve(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.FromContext(ctx).Info("dashboard serving", "address", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// PolicySummary is one policy on the overview.
type PolicySummary struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Mode      string `json:"mode"`
	Target    string `json:"target"`
	Pods      int    `json:"pods"`
	// Before is what the pods request as their template has it, Now what
	// they request now: cores and bytes. BeforeKnown is false where the
	// policy has no template to say (a selector policy).
	CPUBefore    float64 `json:"cpuBefore"`
	CPUNow       float64 `json:"cpuNow"`
	MemoryBefore float64 `json:"memoryBefore"`
	MemoryNow    float64 `json:"memoryNow"`
	BeforeKnown  bool    `json:"beforeKnown"`
	// CostBefore and CostNow are what those requests cost a month, each
	// pod at its node's prices.
	CostBefore  float64 `json:"costBefore"`
	CostNow     float64 `json:"costNow"`
	ResizesHour int     `json:"resizesHour"`
	ResizesDay  int     `json:"resizesDay"`
	// ResizesAtLeast: older resizes were dropped from memory, so the
	// counts are lower bounds.
	ResizesAtLeast bool   `json:"resizesAtLeast"`
	Ready          string `json:"ready"`
	ReadyMessage   string `json:"readyMessage"`
	Blocked        string `json:"blocked"`
	BlockedMessage string `json:"blockedMessage"`
	// Observed is false until the manager has synced the policy since it
	// started (or if it is not the leader).
	Observed bool `json:"observed"`
}

// Overview is the overview page's data.
type Overview struct {
	Policies []PolicySummary `json:"policies"`
	// Namespaces sum the policies of each namespace, by name.
	Namespaces []NamespaceSummary `json:"namespaces"`
	Totals     PolicySummary      `json:"totals"`
	// Prices are what the costs are at.
	Prices price.Book `json:"prices"`
	Time   time.Time  `json:"time"`
}

// NamespaceSummary is one namespace's policies' pods: what they request
// and what that costs a month, before tailor and now.
type NamespaceSummary struct {
	Namespace    string  `json:"namespace"`
	Policies     int     `json:"policies"`
	Pods         int     `json:"pods"`
	CPUBefore    float64 `json:"cpuBefore"`
	CPUNow       float64 `json:"cpuNow"`
	MemoryBefore float64 `json:"memoryBefore"`
	MemoryNow    float64 `json:"memoryNow"`
	CostBefore   float64 `json:"costBefore"`
	CostNow      float64 `json:"costNow"`
}

func (s *Server) overview(ctx context.Context, _ *http.Request) (any, error) {
	var list v1alpha1.TailorPolicyList
	if err := s.Cache.List(ctx, &list); err != nil {
		return nil, err
	}
	book, err := s.book(ctx)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	out := Overview{Time: now, Policies: []PolicySummary{}, Namespaces: []NamespaceSummary{}, Prices: book}
	byNS := map[string]*NamespaceSummary{}
	for i := range list.Items {
		p := &list.Items[i]
		if !s.Shard.Owns(p.Namespace) {
			continue
		}
		sum := s.summary(p, book, now)
		out.Policies = append(out.Policies, sum)
		t := &out.Totals
		t.Pods += sum.Pods
		t.CPUBefore += sum.CPUBefore
		t.CPUNow += sum.CPUNow
		t.MemoryBefore += sum.MemoryBefore
		t.MemoryNow += sum.MemoryNow
		t.CostBefore += sum.CostBefore
		t.CostNow += sum.CostNow
		t.ResizesHour += sum.ResizesHour
		t.ResizesDay += sum.ResizesDay
		ns, ok := byNS[p.Namespace]
		if !ok {
			ns = &NamespaceSummary{Namespace: p.Namespace}
			byNS[p.Namespace] = ns
		}
		ns.Policies++
		ns.Pods += sum.Pods
		ns.CPUBefore += sum.CPUBefore
		ns.CPUNow += sum.CPUNow
		ns.MemoryBefore += sum.MemoryBefore
		ns.MemoryNow += sum.MemoryNow
		ns.CostBefore += sum.CostBefore
		ns.CostNow += sum.CostNow
	}
	slices.SortFunc(out.Policies, func(a, b PolicySummary) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, ns := range byNS {
		out.Namespaces = append(out.Namespaces, *ns)
	}
	slices.SortFunc(out.Namespaces, func(a, b NamespaceSummary) int { return strings.Compare(a.Namespace, b.Namespace) })
	return out, nil
}

// book is the prices of the cluster's nodes, from the cache. A node whose
// price does not parse keeps the flags' (and the log says why).
func (s *Server) book(ctx context.Context) (price.Book, error) {
	var nodes corev1.NodeList
	if err := s.Cache.List(ctx, &nodes); err != nil {
		return price.Book{}, err
	}
	metas := make([]metav1.ObjectMeta, len(nodes.Items))
	for i := range nodes.Items {
		metas[i] = nodes.Items[i].ObjectMeta
	}
	book, err := price.NewBook(s.Prices, s.ExamplePrices, metas)
	if err != nil {
		log.FromContext(ctx).Info("node prices passed over", "error", err.Error())
	}
	return book, nil
}

// monthly is what a pod's cpu (cores) and memory (bytes) requests cost a
// month on node.
func monthly(book price.Book, node string, cpu, memory float64) float64 {
	return book.For(node).Monthly(corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(math.Round(cpu*1000)), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(math.Round(memory)), resource.BinarySI),
	})
}

func (s *Server) summary(p *v1alpha1.TailorPolicy, book price.Book, now time.Time) PolicySummary {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	sum := PolicySummary{Namespace: p.Namespace, Name: p.Name, Mode: string(p.Spec.Mode()), BeforeKnown: true}
	if t := p.Spec.TargetRef; t != nil {
		sum.Target = strings.ToLower(t.Kind) + "/" + t.Name
	} else if p.Spec.Selector != nil {
		sum.Target = metav1.FormatLabelSelector(p.Spec.Selector)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		sum.Ready, sum.ReadyMessage = string(c.Status)+" "+c.Reason, c.Message
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionResizesBlocked); c != nil && c.Status == metav1.ConditionTrue {
		sum.Blocked, sum.BlockedMessage = c.Reason, c.Message
	}
	if pods, ok := s.History.Pods(key); ok {
		sum.Observed = true
		sum.Pods = len(pods)
		for _, po := range pods {
			sum.CPUNow += po.CPURequest
			sum.MemoryNow += po.MemoryRequest
			sum.CPUBefore += po.CPUBefore
			sum.MemoryBefore += po.MemoryBefore
			sum.CostBefore += monthly(book, po.Node, po.CPUBefore, po.MemoryBefore)
			sum.CostNow += monthly(book, po.Node, po.CPURequest, po.MemoryRequest)
			sum.BeforeKnown = sum.BeforeKnown && po.BeforeKnown
		}
		var short bool
		sum.ResizesHour, _ = s.History.Resizes(key, now.Add(-time.Hour))
		sum.ResizesDay, short = s.History.Resizes(key, now.Add(-24*time.Hour))
		sum.ResizesAtLeast = short
	}
	return sum
}

// Workload is the workload page's data.
type Workload struct {
	Summary         PolicySummary                            `json:"summary"`
	Conditions      []metav1.Condition                       `json:"conditions"`
	Recommendations []v1alpha1.RecommendedContainerResources `json:"recommendations"`
	// NodeClasses are the recommendations per class of node of a policy
	// with spec.nodeClasses; none otherwise.
	NodeClasses []v1alpha1.NodeClassRecommendation `json:"nodeClasses,omitempty"`
	Series      []Series                           `json:"series"`
	Marks       []Mark                             `json:"marks"`
	Pods        []PodRow                           `json:"pods"`
	Events      []Event                            `json:"events"`
	Prices      price.Book                         `json:"prices"`
	// EventsError says why events could not be read, if they could not.
	EventsError string `json:"eventsError,omitempty"`
}

// Mark is one resize on the time axis.
type Mark struct {
	Time     int64  `json:"time"`
	Pod      string `json:"pod"`
	Result   string `json:"result"`
	Change   string `json:"change"`
	Capped   bool   `json:"capped,omitempty"`
	Restarts bool   `json:"restarts,omitempty"`
}

// PodRow is one pod: what it requests now and before tailor, and its last
// resize as the policy's status has it.
type PodRow struct {
	Name          string  `json:"name"`
	Node          string  `json:"node"`
	CPURequest    float64 `json:"cpuRequest"`
	MemoryRequest float64 `json:"memoryRequest"`
	CPUBefore     float64 `json:"cpuBefore"`
	MemoryBefore  float64 `json:"memoryBefore"`
	// CostBefore and CostNow are what its requests cost a month at its
	// node's prices.
	CostBefore float64 `json:"costBefore"`
	CostNow    float64 `json:"costNow"`
	LastResize string  `json:"lastResize,omitempty"`
	Result     string  `json:"result,omitempty"`
	Message    string  `json:"message,omitempty"`
}

// Event is one recent event of the policy or its pods.
type Event struct {
	Time   time.Time `json:"time"`
	Type   string    `json:"type"`
	Reason string    `json:"reason"`
	Object string    `json:"object"`
	Note   string    `json:"note"`
	Count  int32     `json:"count"`
}

func (s *Server) workload(ctx context.Context, r *http.Request) (any, error) {
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	if !s.Shard.InScope(key.Namespace) {
		// Nor would the cache hold its policy: it watches only these.
		return nil, &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("namespace %s is not one of this manager's namespaces (%s): open the dashboard of the manager that syncs it", key.Namespace, strings.Join(s.Shard.Namespaces, ", "))}
	}
	if !s.Shard.Owns(key.Namespace) {
		return nil, &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("namespace %s is synced by shard %d of %d: open that shard's dashboard", key.Namespace, shard.Of(key.Namespace, s.Shard.Count), s.Shard.Count)}
	}
	var p v1alpha1.TailorPolicy
	if err := s.Cache.Get(ctx, key, &p); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, &httpError{code: http.StatusNotFound, msg: "no TailorPolicy " + key.String()}
		}
		return nil, err
	}
	book, err := s.book(ctx)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	out := Workload{Summary: s.summary(&p, book, now), Prices: book, Conditions: p.Status.Conditions, Series: []Series{}, Marks: []Mark{}, Pods: []PodRow{}, Events: []Event{}}
	if rec := p.Status.Recommendation; rec != nil {
		out.Recommendations, out.NodeClasses = rec.ContainerRecommendations, rec.NodeClasses
	}
	snap, _ := s.History.Snapshot(key)
	if snap.Series != nil {
		out.Series = snap.Series
	}
	for _, m := range snap.Marks {
		out.Marks = append(out.Marks, Mark{Time: m.Time.Unix(), Pod: m.Pod, Result: m.Result, Change: m.Change, Capped: m.Capped, Restarts: m.Restarts})
	}
	last := map[string]v1alpha1.PodResizeStatus{}
	for _, ps := range p.Status.Pods {
		last[ps.PodName] = ps
	}
	for _, po := range snap.Pods {
		row := PodRow{Name: po.Name, Node: po.Node, CPURequest: po.CPURequest, MemoryRequest: po.MemoryRequest, CPUBefore: po.CPUBefore, MemoryBefore: po.MemoryBefore,
			CostBefore: monthly(book, po.Node, po.CPUBefore, po.MemoryBefore), CostNow: monthly(book, po.Node, po.CPURequest, po.MemoryRequest)}
		if ps, ok := last[po.Name]; ok {
			row.LastResize, row.Result, row.Message = ps.LastResizeTime.UTC().Format(time.RFC3339), string(ps.Result), ps.Message
		}
		out.Pods = append(out.Pods, row)
	}
	if s.Events != nil {
		events, err := s.events(ctx, &p)
		if err != nil {
			out.EventsError = err.Error()
		}
		out.Events = events
	}
	return out, nil
}

// maxEvents bounds the events read for one page.
const maxEvents = 500

func (s *Server) events(ctx context.Context, p *v1alpha1.TailorPolicy) ([]Event, error) {
	var list eventsv1.EventList
	if err := s.Events.List(ctx, &list, client.InNamespace(p.Namespace), client.Limit(maxEvents)); err != nil {
		return []Event{}, err
	}
	out := []Event{}
	for _, e := range list.Items {
		// tailor's events about a pod name the policy as related.
		ours := (e.Regarding.Kind == "TailorPolicy" && e.Regarding.Name == p.Name) ||
			(e.Related != nil && e.Related.Kind == "TailorPolicy" && e.Related.Name == p.Name)
		if !ours {
			continue
		}
		t := e.EventTime.Time
		if e.Series != nil {
			t = e.Series.LastObservedTime.Time
		}
		if t.IsZero() {
			t = e.DeprecatedLastTimestamp.Time
		}
		count := int32(1)
		if e.Series != nil {
			count = e.Series.Count
		}
		out = append(out, Event{Time: t, Type: e.Type, Reason: e.Reason, Object: strings.ToLower(e.Regarding.Kind) + "/" + e.Regarding.Name, Note: e.Note, Count: count})
	}
	slices.SortFunc(out, func(a, b Event) int { return b.Time.Compare(a.Time) })
	if len(out) > 30 {
		out = out[:30]
	}
	return out, nil
}

// NodeRow is one node on the cluster page: cores and bytes.
type NodeRow struct {
	Name              string  `json:"name"`
	CPUAllocatable    float64 `json:"cpuAllocatable"`
	MemoryAllocatable float64 `json:"memoryAllocatable"`
	CPURequested      float64 `json:"cpuRequested"`
	MemoryRequested   float64 `json:"memoryRequested"`
	// Before is what the node's pods would request without tailor: their
	// requests now, with each pod tailor manages at its template's.
	CPUBefore    float64 `json:"cpuBefore"`
	MemoryBefore float64 `json:"memoryBefore"`
	Pods         int     `json:"pods"`
	Managed      int     `json:"managed"`
}

// Cluster is the cluster page's data.
type Cluster struct {
	Nodes []NodeRow `json:"nodes"`
	// NodesFreed is the CPU and memory tailor's changes free, in nodes of
	// the cluster's mean allocatable size.
	CPUNodesFreed    float64 `json:"cpuNodesFreed"`
	MemoryNodesFreed float64 `json:"memoryNodesFreed"`
}

func (s *Server) cluster(ctx context.Context, _ *http.Request) (any, error) {
	var nodes corev1.NodeList
	if err := s.Cache.List(ctx, &nodes); err != nil {
		return nil, err
	}
	rows := map[string]*NodeRow{}
	var order []string
	var cpuAlloc, memAlloc float64
	for _, n := range nodes.Items {
		row := &NodeRow{Name: n.Name,
			CPUAllocatable:    amount.In(n.Status.Allocatable, corev1.ResourceCPU),
			MemoryAllocatable: amount.In(n.Status.Allocatable, corev1.ResourceMemory)}
		rows[n.Name], order = row, append(order, n.Name)
		cpuAlloc += row.CPUAllocatable
		memAlloc += row.MemoryAllocatable
	}
	var pods corev1.PodList
	if err := s.Cache.List(ctx, &pods); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		row, ok := rows[p.Spec.NodeName]
		if !ok || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		cpu, mem := amount.In(req, corev1.ResourceCPU), amount.In(req, corev1.ResourceMemory)
		row.Pods++
		row.CPURequested += cpu
		row.MemoryRequested += mem
	}
	var cpuFreed, memFreed float64
	for _, po := range s.History.AllPods() {
		row, ok := rows[po.Node]
		if !ok {
			continue
		}
		row.Managed++
		row.CPUBefore += po.CPUBefore - po.CPURequest
		row.MemoryBefore += po.MemoryBefore - po.MemoryRequest
		cpuFreed += po.CPUBefore - po.CPURequest
		memFreed += po.MemoryBefore - po.MemoryRequest
	}
	out := Cluster{Nodes: []NodeRow{}}
	slices.Sort(order)
	for _, name := range order {
		row := rows[name]
		row.CPUBefore += row.CPURequested
		row.MemoryBefore += row.MemoryRequested
		out.Nodes = append(out.Nodes, *row)
	}
	if n := float64(len(order)); n > 0 && cpuAlloc > 0 && memAlloc > 0 {
		out.CPUNodesFreed = cpuFreed / (cpuAlloc / n)
		out.MemoryNodesFreed = memFreed / (memAlloc / n)
	}
	return out, nil
}
