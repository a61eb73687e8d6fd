package report

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Path is where the manager takes reports (POST, JSON, with the agent's
// projected service-account token as a bearer token).
const Path = "/agent/v1/report"

// Audience is the audience of the agent's token: the manager accepts no
// token minted for anything else (the API server, another service), and
// a token the agent holds is good for nothing but reporting.
const Audience = "tailor-manager"

// MaxBytes bounds a report's body: about 300 bytes per container, and the
// kubelet's default of at most 110 pods per node.
const MaxBytes = 4 << 20

// Report is one push from an agent.
type Report struct {
	// Urgent says some container crossed a threshold since the last push:
	// the manager syncs their policies now instead of at the next sync.
	Urgent bool `json:"urgent,omitempty"`
	// Containers holds every pod container on the node: one missing from
	// a report is gone.
	Containers []Container `json:"containers"`
}

// Container is one container's figures.
type Container struct {
	PodUID string `json:"podUID"`
	ID     string `json:"id"`
	// Time is when the newest sample was read.
	Time time.Time `json:"time"`
	// Window is what CPU and Throttled cover (since the last push); 0 when
	// the container has only one sample so far.
	Window Seconds `json:"window,omitempty"`
	// CPU is the average use over Window, in cores.
	CPU float64 `json:"cpu"`
	// Throttled is the share of CFS periods throttled over Window; nil
	// without a CPU limit or with no period run.
	Throttled *float64 `json:"throttled,omitempty"`
	// WorkingSet is the memory the kernel cannot reclaim, in bytes;
	// MemoryLimit the cgroup's limit (0: none).
	WorkingSet  uint64 `json:"workingSet"`
	MemoryLimit uint64 `json:"memoryLimit,omitempty"`
	// MemoryGrowth is how fast the working set grows, in bytes a second:
	// the steeper of its growth over the last few samples and over the
	// newest interval, so a ramp that just began is not diluted by the
	// flat seconds before it; 0 when it is no higher than those few
	// samples ago.
	MemoryGrowth float64 `json:"memoryGrowth,omitempty"`
	// OOMKills counts the kernel's OOM kills in the cgroup.
	OOMKills uint64 `json:"oomKills,omitempty"`
	// CPUPressure and MemoryPressure are the cgroup v2 PSI "some" shares
	// of wall time stalled over the last 10s (0 to 1); nil on cgroup v1.
	CPUPressure    *float64 `json:"cpuPressure,omitempty"`
	MemoryPressure *float64 `json:"memoryPressure,omitempty"`
	// Urgent says why the container needs a sync now ("" when it does not).
	Urgent string `json:"urgent,omitempty"`
	// MemoryAtRisk says the working set is on course to reach its limit
	// soon, or memory stalls are high: the OOM killer may act before the
	// next sync.
	MemoryAtRisk bool `json:"memoryAtRisk,omitempty"`
	// JVM is what the agent read of the JVM the container runs, with
	// --jvm (off by default, and then never set): an agent or a manager
	// from before it sends and takes reports without it.
	JVM *JVM `json:"jvm,omitempty"`
}

// JVM is one container's JVM as the agent reads it from the process (its
// hsperfdata counters), in bytes.
type JVM struct {
	// Collector is G1, Parallel, Serial, ZGC or Shenandoah ("" unknown).
	Collector string `json:"collector,omitempty"`
	// HeapMax is the heap's maximum, as the JVM sized it (from -Xmx or
	// MaxRAMPercentage): what a pod's spec does not always say.
	HeapMax       uint64 `json:"heapMax"`
	HeapCommitted uint64 `json:"heapCommitted"`
	HeapUsed      uint64 `json:"heapUsed"`
	// NonHeap is what the container holds outside the heap, measured: the
	// larger of its working set less the committed heap and the JVM's own
	// non-heap counters (metaspace, compiled code).
	NonHeap   uint64 `json:"nonHeap"`
	Metaspace uint64 `json:"metaspace,omitempty"`
	Threads   uint64 `json:"threads,omitempty"`
	// Processes counts the JVMs in the container; the figures are the one
	// with the largest heap's.
	Processes int `json:"processes,omitempty"`
	// SoftMax is the SoftMaxHeapSize the agent last set (0: none), and
	// SoftMaxLimit the memory limit it fits beside the non-heap and the
	// headroom: the container's, an earlier one while an attach fails
	// (SoftMaxNote says why), or 0 where no bound fits, which SoftMax
	// alone does not tell. They are the agent's account of what it did:
	// the manager decides on HeapMax and NonHeap. The bound follows a new
	// limit at the agent's first push after the kubelet applies it, and no
	// lowering waits on it: the manager never lowers a JVM's limit below
	// its reach (jvm.MeasuredReach), where the bound is the whole heap.
	SoftMax      uint64 `json:"softMax,omitempty"`
	SoftMaxLimit uint64 `json:"softMaxLimit,omitempty"`
	// SoftMaxNote says why the agent does not move the bound, where it
	// does not (a collector that ignores it, the mode off, an attach
	// that failed).
	SoftMaxNote string `json:"softMaxNote,omitempty"`
}

// Validate refuses figures no JVM has. The agent reads them from a file
// the container writes, so it checks them with this before it reports
// them: a container cannot get its node's report refused.
func (j *JVM) Validate() error {
	switch {
	case j.HeapMax == 0 || j.HeapMax > MaxJVMBytes:
		return fmt.Errorf("heap max %d: not a JVM's", j.HeapMax)
	case j.HeapCommitted > 2*j.HeapMax || j.HeapUsed > 2*j.HeapMax:
		return fmt.Errorf("heap committed %d, used %d, over twice its max %d", j.HeapCommitted, j.HeapUsed, j.HeapMax)
	case j.NonHeap > MaxJVMBytes || j.Metaspace > MaxJVMBytes || j.SoftMax > j.HeapMax:
		return fmt.Errorf("non-heap %d, metaspace %d, soft max %d (heap max %d): not a JVM's", j.NonHeap, j.Metaspace, j.SoftMax, j.HeapMax)
	case j.Processes < 0:
		return fmt.Errorf("%d processes", j.Processes)
	}
	return nil
}

// MaxJVMBytes bounds a JVM's sizes: 64TiB, past any heap HotSpot takes.
const MaxJVMBytes = 64 << 40

// Seconds is a duration in seconds on the wire.
type Seconds float64

func (s Seconds) Duration() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

// Validate refuses a report no agent makes: a manager must not scale on
// garbage, and a container's figures are judged again when they are used.
func (r *Report) Validate() error {
	seen := make(map[string]bool, len(r.Containers))
	var errs []error
	for i, c := range r.Containers {
		if c.ID == "" || c.PodUID == "" {
			errs = append(errs, fmt.Errorf("containers[%d]: no pod UID or container ID", i))
			continue
		}
		if seen[c.ID] {
			errs = append(errs, fmt.Errorf("containers[%d]: container %s twice", i, c.ID))
		}
		seen[c.ID] = true
		for name, v := range map[string]float64{"window": float64(c.Window), "cpu": c.CPU, "memoryGrowth": c.MemoryGrowth} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				errs = append(errs, fmt.Errorf("containers[%d] %s: %v is not a usage", i, name, v))
			}
		}
		for name, p := range map[string]*float64{"throttled": c.Throttled, "cpuPressure": c.CPUPressure, "memoryPressure": c.MemoryPressure} {
			if p != nil && (math.IsNaN(*p) || *p < 0 || *p > 1) {
				errs = append(errs, fmt.Errorf("containers[%d] %s: %v is not a share", i, name, *p))
			}
		}
		if c.JVM != nil {
			if err := c.JVM.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("containers[%d] jvm: %w", i, err))
			}
		}
		if c.Time.IsZero() {
			errs = append(errs, fmt.Errorf("containers[%d]: no time", i))
		}
	}
	return errors.Join(errs...)
}

// CABundleKey is the key, in the ConfigMap the managers publish for the
// agents, of the PEM bundle of CAs the managers' serving certificate
// chains to. The agents push only over TLS, verified against it.
const CABundleKey = "ca.crt"

// ServerName is the name the agents check the managers' certificate for:
// the .svc name of the Service in front of the managers' report port
// (the agents dial its endpoints' addresses directly).
func ServerName(service, namespace string) string {
	return service + "." + namespace + ".svc"
}
