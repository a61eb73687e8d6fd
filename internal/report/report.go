package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/prometheus/common/model"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/amount"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/price"
	"github.com/tailorhq/tailor/internal/recommend"
)

// Workload is one workload's running pods, the policy that sizes them if
// any, and their usage history when a metrics history was read.
type Workload struct {
	Namespace string
	// Kind and Name are the workload's: the pods' controller, or the
	// Deployment owning their ReplicaSet; Kind "Pod" for a pod without one.
	Kind, Name string
	Pods       []*corev1.Pod
	Policy     *v1alpha1.TailorPolicy
	// History is each container's usage over the report's window, the
	// busiest pod's at each step; nil when none was read.
	History map[string]*History
}

// History is one container's usage over a window.
type History struct {
	// CPU is cores and Memory working-set bytes, at their times.
	CPU, Memory []Sample
	// Throttled is the share of CFS periods throttled over the window, or
	// negative when unknown (no limit, or no series).
	Throttled float64
}

// Sample is one reading.
type Sample struct {
	Time  time.Time
	Value float64
}

// Row is one container of one workload.
type Row struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Workload  string `json:"workload"`
	Container string `json:"container"`
	Replicas  int    `json:"replicas"`
	// Requests and Limits are the container's now, the largest across
	// the workload's pods.
	Requests corev1.ResourceList `json:"requests,omitempty"`
	Limits   corev1.ResourceList `json:"limits,omitempty"`
	// Recommended is the request tailor recommends, per resource it has
	// one for.
	Recommended corev1.ResourceList `json:"recommended,omitempty"`
	// RecommendedLimit is the memory limit tailor recommends apart from
	// the request (the tail of usage, where the kernel kills; the request
	// is the typical peak), which a template's memory limit is sized at
	// least to under RequestsAndLimits (podchange.Target.MemoryLimit).
	RecommendedLimit corev1.ResourceList `json:"recommendedLimit,omitempty"`
	// Source is where the recommendation comes from: "policy NAME (MODE)",
	// "history", or "" when there is none.
	Source string `json:"source"`
	// SavingsCPU (cores) and SavingsMemory (bytes) are what moving every
	// replica's request to the recommendation would free, negative where
	// it would take more.
	SavingsCPU    float64 `json:"savingsCPU"`
	SavingsMemory float64 `json:"savingsMemoryBytes"`
	// MonthlyCostBefore and MonthlyCostAfter are what every replica's
	// requests cost a month now and with each request the recommendation
	// sizes at it, each pod at its node's prices (price.Book): the same
	// requests the savings compare.
	MonthlyCostBefore float64 `json:"monthlyCostBefore"`
	MonthlyCostAfter  float64 `json:"monthlyCostAfter"`
	// Reason says in one line what the recommendation rests on.
	Reason string `json:"reason"`
	// JVM is what the container's JVM heap makes of its memory limit,
	// where memory above the heap's reach is wasted or a full heap cannot
	// use a raise; absent otherwise.
	JVM *JVMAdvice `json:"jvm,omitempty"`
}

// Group sorts pods into workloads: by controller, a ReplicaSet's pods
// under the Deployment that owns it (named by it and the pod's
// pod-template-hash), and each pod without a controller on its own.
// Pods that are not running are left out.
func Group(pods []corev1.Pod) []*Workload {
	byKey := map[string]*Workload{}
	var out []*Workload
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
			continue
		}
		kind, name := "Pod", p.Name
		if ref := metav1.GetControllerOf(p); ref != nil {
			kind, name = ref.Kind, ref.Name
			if hash := p.Labels["pod-template-hash"]; ref.Kind == "ReplicaSet" && hash != "" && strings.HasSuffix(ref.Name, "-"+hash) {
				kind, name = "Deployment", strings.TrimSuffix(ref.Name, "-"+hash)
			}
		}
		key := p.Namespace + "/" + kind + "/" + name
		w, ok := byKey[key]
		if !ok {
			w = &Workload{Namespace: p.Namespace, Kind: kind, Name: name}
			byKey[key] = w
			out = append(out, w)
		}
		w.Pods = append(w.Pods, p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Namespace+"/"+a.Kind+"/"+a.Name < b.Namespace+"/"+b.Kind+"/"+b.Name
	})
	return out
}

// Match gives each workload the policy that sizes it: one whose targetRef
// names it, else one whose selector picks its pods. A policy whose
// selector does not parse matches nothing.
func Match(workloads []*Workload, policies []v1alpha1.TailorPolicy) {
	for _, w := range workloads {
		for i := range policies {
			p := &policies[i]
			if p.Namespace != w.Namespace {
				continue
			}
			if ref := p.Spec.TargetRef; ref != nil && ref.Kind == w.Kind && ref.Name == w.Name {
				w.Policy = p
				break
			}
			if p.Spec.Selector == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			if err != nil || sel.Empty() {
				continue
			}
			if sel.Matches(labels.Set(w.Pods[0].Labels)) {
				w.Policy = p
			}
		}
	}
}

// Build turns workloads into rows, one per container that runs alongside
// the workload (regular containers and sidecars). A workload with a policy
// takes the policy's recommendation, in any mode; one without takes what
// tailor's recommender makes of its history (cfg, over window); one with
// neither has no recommendation. Each row's cost is at prices.
func Build(workloads []*Workload, cfg recommend.Config, window time.Duration, now time.Time, prices price.Book) ([]Row, error) {
	rec, err := recommend.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var rows []Row
	for _, w := range workloads {
		for _, name := range podcontainers.Names(w.Pods[0]) {
			row := Row{Namespace: w.Namespace, Kind: w.Kind, Workload: w.Name, Container: name, Replicas: len(w.Pods)}
			row.Requests, row.Limits = largest(w.Pods, name)
			h, seen := w.History[name]
			seen = seen && h != nil
			switch {
			case w.Policy != nil:
				row.Source = fmt.Sprintf("policy %s (%s)", w.Policy.Name, w.Policy.Spec.Mode())
				row.Recommended, row.RecommendedLimit = fromPolicy(w.Policy, name)
				row.Reason = policyReason(w.Policy, name, row.Recommended)
			case seen:
				row.Source = "history"
				row.Recommended, row.RecommendedLimit = fromHistory(rec, *h, now)
			default:
				row.Reason = "no policy and no usage history: give a metrics history (--prometheus-url) or a TailorPolicy in mode Off"
			}
			if seen {
				row.Reason = strings.TrimPrefix(row.Reason+"; "+historyReason(*h, window), "; ")
			}
			row.JVM = runningJVM(w, name, row)
			row.SavingsCPU, row.SavingsMemory = savings(w.Pods, name, row.Recommended)
			row.MonthlyCostBefore, row.MonthlyCostAfter = monthlyCosts(w.Pods, name, row.Recommended, prices)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// fromPolicy is the request the policy's recommendation converges to: what
// the usage needs (its lowerBound) within the policy's bounds. The target
// may still hold a higher value while a lowering waits out its
// stabilization window; that wait is the policy's pace, not its estimate.
// The memory limit advised apart is status's targetLimit as it is.
func fromPolicy(p *v1alpha1.TailorPolicy, container string) (corev1.ResourceList, corev1.ResourceList) {
	if p.Status.Recommendation == nil {
		return nil, nil
	}
	for _, cr := range p.Status.Recommendation.ContainerRecommendations {
		if cr.ContainerName != container {
			continue
		}
		out := corev1.ResourceList{}
		pol, err := p.Spec.PolicyFor(container)
		for r, t := range cr.Target {
			q := t
			if lo, ok := cr.LowerBound[r]; ok {
				q = lo
			}
			if err == nil {
				if m, ok := pol.MinAllowed[r]; ok && q.Cmp(m) < 0 {
					q = m
				}
				if m, ok := pol.MaxAllowed[r]; ok && q.Cmp(m) > 0 {
					q = m
				}
			}
			out[r] = q.DeepCopy()
		}
		return out, cr.TargetLimit.DeepCopy()
	}
	return nil, nil
}

func policyReason(p *v1alpha1.TailorPolicy, container string, rec corev1.ResourceList) string {
	if rec == nil {
		return fmt.Sprintf("policy %s has no recommendation for %s yet", p.Name, container)
	}
	for _, cr := range p.Status.Recommendation.ContainerRecommendations {
		if cr.ContainerName != container {
			continue
		}
		var parts []string
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			t, ok := cr.Target[r]
			if !ok {
				continue
			}
			q := rec[r]
			s := fmt.Sprintf("%s needs %s", r, q.String())
			if t.Cmp(q) != 0 {
				s += fmt.Sprintf(" (the policy's target is %s for now)", t.String())
			}
			parts = append(parts, s)
		}
		out := "peak usage plus margin: " + strings.Join(parts, "; ")
		if n := len(p.Status.Recommendation.NodeClasses); n > 0 {
			// Each pod is sized at its node's class: the row prices them
			// all at the largest, so what it saves is the least.
			out += fmt.Sprintf(" (the largest of %d node classes, which each pod is sized by)", n)
		}
		return out
	}
	return ""
}

// fromHistory feeds the history to a fresh recommender state, as the
// manager's would have learnt it, and takes what it needs.
func fromHistory(rec *recommend.Recommender, h History, now time.Time) (corev1.ResourceList, corev1.ResourceList) {
	st := rec.NewState()
	type point struct {
		t        time.Time
		cpu, mem float64
	}
	byTime := map[int64]*point{}
	var pts []*point
	add := func(s Sample, cpu bool) {
		k := s.Time.Unix()
		p, ok := byTime[k]
		if !ok {
			p = &point{t: s.Time, cpu: -1}
			byTime[k] = p
			pts = append(pts, p)
		}
		if cpu {
			p.cpu = s.Value
		} else {
			p.mem = s.Value
		}
	}
	for _, s := range h.CPU {
		add(s, true)
	}
	for _, s := range h.Memory {
		add(s, false)
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].t.Before(pts[j].t) })
	for _, p := range pts {
		st.AddSample(recommend.Sample{CPU: p.cpu, Memory: p.mem}, p.t)
	}
	adv := st.Recommend(recommend.Resources{}, time.Time{}, now)
	out := corev1.ResourceList{}
	if v, ok := adv.CPU.Needed(); ok && v > 0 {
		out[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(math.Ceil(v*1000)), resource.DecimalSI)
	}
	const mi = 1 << 20
	if v, ok := adv.Memory.Needed(); ok && v > 0 {
		out[corev1.ResourceMemory] = *resource.NewQuantity(int64(math.Ceil(v/mi))*mi, resource.BinarySI)
	}
	var limit corev1.ResourceList
	if v, ok := adv.MemoryLimit.Needed(); ok && v > 0 {
		limit = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(int64(math.Ceil(v/mi))*mi, resource.BinarySI)}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, limit
}

// historyReason is "p95 CPU 120m, peak 340m over 7d; throttled 3% of
// periods; memory peak 410Mi".
func historyReason(h History, window time.Duration) string {
	var parts []string
	if len(h.CPU) > 0 {
		p95, peak := percentile(h.CPU, 0.95), percentile(h.CPU, 1)
		parts = append(parts, fmt.Sprintf("p95 CPU %dm, peak %dm over %s", int64(math.Ceil(p95*1000)), int64(math.Ceil(peak*1000)), days(window)))
	}
	if h.Throttled >= 0 && len(h.CPU) > 0 {
		parts = append(parts, fmt.Sprintf("throttled %.0f%% of periods", h.Throttled*100))
	}
	if len(h.Memory) > 0 {
		parts = append(parts, "memory peak "+resource.NewQuantity(int64(percentile(h.Memory, 1)), resource.BinarySI).String())
	}
	return strings.Join(parts, "; ")
}

// days writes a window as --window takes it: 7d, 48h, 15m.
func days(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return model.Duration(d).String()
}

func percentile(xs []Sample, q float64) float64 {
	vs := make([]float64, len(xs))
	for i, s := range xs {
		vs[i] = s.Value
	}
	sort.Float64s(vs)
	i := int(math.Ceil(q*float64(len(vs)))) - 1
	return vs[max(i, 0)]
}

// savings is what moving each pod's request of name to rec frees.
func savings(pods []*corev1.Pod, name string, rec corev1.ResourceList) (float64, float64) {
	var cpu, mem float64
	for _, p := range pods {
		c := podcontainers.Named(p, name)
		if c == nil {
			continue
		}
		if q, ok := rec[corev1.ResourceCPU]; ok {
			if cur, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
				cpu += amount.Of(corev1.ResourceCPU, cur) - amount.Of(corev1.ResourceCPU, q)
			}
		}
		if q, ok := rec[corev1.ResourceMemory]; ok {
			if cur, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
				mem += amount.Of(corev1.ResourceMemory, cur) - amount.Of(corev1.ResourceMemory, q)
			}
		}
	}
	return cpu, mem
}

// monthlyCosts is what each pod's requests of name cost a month at its
// node's prices, now and with rec in place of each request it sizes.
func monthlyCosts(pods []*corev1.Pod, name string, rec corev1.ResourceList, prices price.Book) (float64, float64) {
	var before, after float64
	for _, p := range pods {
		c := podcontainers.Named(p, name)
		if c == nil {
			continue
		}
		at := prices.For(p.Spec.NodeName)
		before += at.Monthly(c.Resources.Requests)
		after += at.Monthly(Recommended(c.Resources.Requests, rec))
	}
	return before, after
}

// Recommended is requests with each one rec sizes at rec's value: the
// requests a pod would have at the recommendation. A resource the
// container does not request stays unrequested, as tailor never adds a
// request.
func Recommended(requests, rec corev1.ResourceList) corev1.ResourceList {
	out := requests.DeepCopy()
	for r, q := range rec {
		if _, ok := out[r]; ok {
			out[r] = q.DeepCopy()
		}
	}
	return out
}

func largest(pods []*corev1.Pod, name string) (corev1.ResourceList, corev1.ResourceList) {
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}
	for _, p := range pods {
		c := podcontainers.Named(p, name)
		if c == nil {
			continue
		}
		for _, pair := range []struct{ dst, src corev1.ResourceList }{{req, c.Resources.Requests}, {lim, c.Resources.Limits}} {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, ok := pair.src[r]; ok {
					if cur, had := pair.dst[r]; !had || q.Cmp(cur) > 0 {
						pair.dst[r] = q.DeepCopy()
					}
				}
			}
		}
	}
	return req, lim
}
