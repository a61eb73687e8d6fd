package dashboard

import (
	"math"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tailorhq/tailor/internal/observation"
)

// Defaults for History: half an hour of points at the default 10s sync,
// the last 100 resizes of each policy for the charts, and the times of its
// last 1,024 for the hourly and daily counts. Full, at 1,000 policies of
// two containers and 10,000 pods, they hold about 30 MiB (measured by
// BenchmarkHistoryMemory).
const (
	DefaultPoints = 180
	DefaultMarks  = 100
	maxSent       = 1024
)

// figures are the series of a container's chart, in this order.
const (
	cpuUsage = iota
	cpuRequest
	cpuLimit
	cpuTarget
	memoryUsage
	memoryRequest
	memoryLimit
	memoryTarget
	figures
)

// point is one sync's figures of one container: float32 holds a request to
// a millicore or a memory figure to within 64 KiB of 512 GiB, and halves
// what a point costs (40 bytes).
type point struct {
	t int64
	v [figures]float32
}

// ring keeps the newest cap points.
type ring struct {
	points []point
	next   int
	full   bool
}

func (r *ring) add(p point, capacity int) {
	if r.points == nil {
		// Whole at once: growing by appends would leave up to 40% of the
		// array unused once full.
		r.points = make([]point, 0, capacity)
	}
	if !r.full && len(r.points) < capacity {
		r.points = append(r.points, p)
		if len(r.points) == capacity {
			r.full, r.next = true, 0
		}
		return
	}
	r.points[r.next] = p
	r.next = (r.next + 1) % len(r.points)
}

// ordered returns the points oldest first.
func (r *ring) ordered() []point {
	if !r.full {
		return slices.Clone(r.points)
	}
	return append(slices.Clone(r.points[r.next:]), r.points[:r.next]...)
}

type policyHistory struct {
	containers map[string]*ring
	order      []string
	last       time.Time
	pods       []observation.PodObservation
	marks      []observation.ResizeMark
	// sent are the Unix times of the resizes sent (not refused), oldest
	// first, at most maxSent.
	sent []int64
}

// History is the dashboard's memory of each policy: a bounded ring of
// points per container, the newest observation of its pods, and its last
// resizes. It is a observation.Observer. Its cost is bounded by the number of
// policies and containers, not pods: Points x 40 bytes per container (7
// KiB at the default 180), plus the marks, the resize times and the newest
// pod list.
type History struct {
	// Points is how many points each container keeps; Every is the least
	// time between two (syncs that a pod's change brings forward do not
	// add points); Marks is how many resizes each policy keeps.
	Points int
	Every  time.Duration
	Marks  int

	mu       sync.Mutex
	policies map[types.NamespacedName]*policyHistory
}

var _ observation.Observer = (*History)(nil)

// NewHistory returns a History keeping points one every `every`.
func NewHistory(points int, every time.Duration) *History {
	if points <= 0 {
		points = DefaultPoints
	}
	return &History{Points: points, Every: every, Marks: DefaultMarks, policies: map[types.NamespacedName]*policyHistory{}}
}

func (h *History) policy(key types.NamespacedName) *policyHistory {
	ph, ok := h.policies[key]
	if !ok {
		ph = &policyHistory{containers: map[string]*ring{}}
		h.policies[key] = ph
	}
	return ph
}

// Observe records a sync's observation.
func (h *History) Observe(key types.NamespacedName, o observation.Observation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ph := h.policy(key)
	ph.pods = o.Pods
	if !ph.last.IsZero() && o.Time.Sub(ph.last) < h.Every {
		return
	}
	ph.last = o.Time
	for _, c := range o.Containers {
		r, ok := ph.containers[c.Name]
		if !ok {
			r = &ring{}
			ph.containers[c.Name] = r
			ph.order = append(ph.order, c.Name)
		}
		p := point{t: o.Time.Unix()}
		for i, v := range [figures]float64{c.CPU, c.CPURequest, c.CPULimit, c.CPUTarget, c.Memory, c.MemoryRequest, c.MemoryLimit, c.MemoryTarget} {
			p.v[i] = float32(v)
		}
		r.add(p, h.Points)
	}
}

// Resized records a resize, or the outcome of one already recorded (the
// same pod and generation).
func (h *History) Resized(key types.NamespacedName, m observation.ResizeMark) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ph := h.policy(key)
	if m.Generation != 0 {
		for i := len(ph.marks) - 1; i >= 0; i-- {
			if ph.marks[i].Pod == m.Pod && ph.marks[i].Generation == m.Generation {
				// The outcome; what was sent stays as it was.
				ph.marks[i].Result = m.Result
				if m.Change != "" {
					ph.marks[i].Change = m.Change
				}
				return
			}
		}
	}
	ph.marks = append(ph.marks, m)
	if len(ph.marks) > h.Marks {
		ph.marks = slices.Delete(ph.marks, 0, len(ph.marks)-h.Marks)
	}
	if m.Result != observation.ResultRefused {
		// In time order whatever order they come in, for the counts'
		// binary search.
		at := m.Time.Unix()
		i, _ := slices.BinarySearch(ph.sent, at)
		ph.sent = slices.Insert(ph.sent, i, at)
		if len(ph.sent) > maxSent {
			ph.sent = slices.Delete(ph.sent, 0, len(ph.sent)-maxSent)
		}
	}
}

// Pods copies the pods of key's newest observation; ok is false when
// nothing was recorded. The overview and cluster pages need no series, and
// copying every policy's series for them would cost a page load megabytes.
func (h *History) Pods(key types.NamespacedName) ([]observation.PodObservation, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ph, ok := h.policies[key]
	if !ok {
		return nil, false
	}
	return slices.Clone(ph.pods), true
}

// AllPods copies the pods of every policy's newest observation.
func (h *History) AllPods() []observation.PodObservation {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []observation.PodObservation
	for _, ph := range h.policies {
		out = append(out, ph.pods...)
	}
	return out
}

// Forget drops a deleted policy.
func (h *History) Forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.policies, key)
}

// Series is one container's chart data: Time in Unix seconds and one
// slice per figure, null where unknown.
type Series struct {
	Container     string     `json:"container"`
	Time          []int64    `json:"time"`
	CPUUsage      []*float64 `json:"cpuUsage"`
	CPURequest    []*float64 `json:"cpuRequest"`
	CPULimit      []*float64 `json:"cpuLimit"`
	CPUTarget     []*float64 `json:"cpuTarget"`
	MemoryUsage   []*float64 `json:"memoryUsage"`
	MemoryRequest []*float64 `json:"memoryRequest"`
	MemoryLimit   []*float64 `json:"memoryLimit"`
	MemoryTarget  []*float64 `json:"memoryTarget"`
}

// Snapshot is a copy of one policy's history.
type Snapshot struct {
	Series []Series
	Pods   []observation.PodObservation
	Marks  []observation.ResizeMark
}

// Snapshot copies key's history; ok is false when nothing was recorded.
func (h *History) Snapshot(key types.NamespacedName) (Snapshot, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ph, ok := h.policies[key]
	if !ok {
		return Snapshot{}, false
	}
	s := Snapshot{Pods: slices.Clone(ph.pods), Marks: slices.Clone(ph.marks)}
	for _, name := range ph.order {
		pts := ph.containers[name].ordered()
		se := Series{Container: name}
		cols := [figures]*[]*float64{&se.CPUUsage, &se.CPURequest, &se.CPULimit, &se.CPUTarget, &se.MemoryUsage, &se.MemoryRequest, &se.MemoryLimit, &se.MemoryTarget}
		for _, p := range pts {
			se.Time = append(se.Time, p.t)
			for i, col := range cols {
				*col = append(*col, known(p.v[i]))
			}
		}
		s.Series = append(s.Series, se)
	}
	return s, true
}

func known(v float32) *float64 {
	if math.IsNaN(float64(v)) {
		return nil
	}
	f := float64(v)
	return &f
}

// Resizes counts key's resizes (not refusals) sent since `since`, and
// whether the count may be short because older marks were dropped.
func (h *History) Resizes(key types.NamespacedName, since time.Time) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ph, ok := h.policies[key]
	if !ok {
		return 0, false
	}
	i, _ := slices.BinarySearch(ph.sent, since.Unix())
	n := len(ph.sent) - i
	return n, len(ph.sent) == maxSent && i == 0
}
