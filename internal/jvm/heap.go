package jvm

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/internal/jvm/softmax"
)

// Heap is what a container's spec says of the JVM it runs.
type Heap struct {
	// JVM: the container runs one (its command or arguments start java, or
	// it sets the JVM's option variables).
	JVM bool
	// Max is the heap's maximum where an option fixes it (-Xmx,
	// -XX:MaxHeapSize); nil where the JVM sizes it from its memory limit.
	Max *resource.Quantity
	// Option is the option that set Max, or that sizes the heap from the
	// limit ("-XX:MaxRAMPercentage=50", or "" for the JVM's default 25%).
	Option string
	// Unknown names an option variable set from a ConfigMap or Secret,
	// whose value the spec does not hold: the heap's maximum may be
	// anything.
	Unknown string
}

// The variables the JVM and its launcher read options from, in the order
// their options apply, each overriding the ones before: JAVA_TOOL_OPTIONS
// before the command line, JDK_JAVA_OPTIONS prepended to the launcher's
// arguments, _JAVA_OPTIONS after everything.
var (
	before = []string{"JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"}
	after  = []string{"_JAVA_OPTIONS"}
)

// HeapOf reads c's spec. Options are taken in the order the JVM applies
// them, the last of each kind winning, as the JVM's own are.
func HeapOf(c *corev1.Container) Heap {
	var h Heap
	env := map[string]*corev1.EnvVar{}
	for i := range c.Env {
		env[c.Env[i].Name] = &c.Env[i]
	}
	var opts []string
	fromEnv := func(names []string) {
		for _, n := range names {
			e, ok := env[n]
			if !ok {
				continue
			}
			h.JVM = true
			if e.ValueFrom != nil {
				h.Unknown = n
				continue
			}
			opts = append(opts, strings.Fields(e.Value)...)
		}
	}
	fromEnv(before)
	if line := append(append([]string(nil), c.Command...), c.Args...); runsJava(line) {
		h.JVM = true
		for _, word := range line {
			opts = append(opts, strings.Fields(word)...)
		}
	}
	fromEnv(after)
	if !h.JVM {
		return Heap{}
	}
	for _, o := range opts {
		switch {
		case strings.HasPrefix(o, "-Xmx"):
			h.set(o, strings.TrimPrefix(o, "-Xmx"))
		case strings.HasPrefix(o, "-XX:MaxHeapSize="):
			h.set(o, strings.TrimPrefix(o, "-XX:MaxHeapSize="))
		case strings.HasPrefix(o, "-XX:MaxRAMPercentage="):
			if h.Max == nil {
				h.Option = o
			}
		}
	}
	return h
}

// set records a maximum heap option; a size the JVM would refuse leaves
// what was there.
func (h *Heap) set(option, size string) {
	if q, ok := parseSize(size); ok {
		h.Max, h.Option = &q, option
	}
}

// runsJava: the command line starts a java launcher, directly or through a
// shell that runs one ("sh -c 'exec java ...'").
func runsJava(line []string) bool {
	for _, word := range line {
		for _, f := range strings.Fields(word) {
			if f == "java" || strings.HasSuffix(f, "/java") {
				return true
			}
		}
	}
	return false
}

// parseSize reads a JVM size: a whole number of bytes, or of k, m, g or t
// (either case), each 1024 of the one before.
func parseSize(s string) (resource.Quantity, bool) {
	if s == "" {
		return resource.Quantity{}, false
	}
	shift := 0
	switch s[len(s)-1] {
	case 'k', 'K':
		shift = 10
	case 'm', 'M':
		shift = 20
	case 'g', 'G':
		shift = 30
	case 't', 'T':
		shift = 40
	}
	if shift > 0 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)>>shift {
		return resource.Quantity{}, false
	}
	return *resource.NewQuantity(n<<shift, resource.BinarySI), true
}

// NonHeap is what a JVM is taken to hold outside its heap, beyond a quarter
// of the heap's maximum: metaspace, the code cache, thread stacks, the
// collector's own structures and direct buffers. A small service's is
// tens of MiB; the quarter follows the collectors, whose remembered sets
// and marking bitmaps grow with the heap. It is the spec's estimate: the
// process itself says more, and what it says is not read here yet.
var NonHeap = resource.MustParse("64Mi")

// Reach is the memory limit under which a JVM of heap maximum max may be
// OOM-killed once its heap fills: the maximum, a quarter more, and NonHeap.
func Reach(max resource.Quantity) resource.Quantity {
	reach := *resource.NewQuantity(max.Value()+max.Value()/4, resource.BinarySI)
	reach.Add(NonHeap)
	return reach
}

// Measured is what the node agent read of a container's running JVM
// (agent --jvm; internal/jvm/perfdata), in bytes: the heap's maximum as
// the JVM sized it, and what the container holds outside the heap. The
// container writes the file these come from, so they are claims: the
// decision lets them keep a limit up, never raise one.
type Measured struct {
	HeapMax, NonHeap int64
}

// MeasuredReach is the memory limit a JVM needs for its whole heap beside
// the non-heap measured: the least under which the agent's soft bound
// (internal/jvm/softmax) would be the heap's maximum, the same headroom
// left free.
func MeasuredReach(m Measured) resource.Quantity {
	return *resource.NewQuantity(softmax.LimitFor(m.HeapMax, m.NonHeap), resource.BinarySI)
}

// Slim is the part of c's command and environment HeapOf reads, for a
// cache that keeps no more of a pod than tailor reads: for a JVM, its
// launcher and the one option that sizes its heap, and an option variable
// whose value the spec does not hold; for any other program, nothing.
// HeapOf reads the same Heap from it as from c.
func Slim(c *corev1.Container) ([]string, []corev1.EnvVar) {
	h := HeapOf(c)
	if !h.JVM {
		return nil, nil
	}
	command := []string{"java"}
	if h.Option != "" {
		command = append(command, h.Option)
	}
	var env []corev1.EnvVar
	if h.Unknown != "" {
		env = []corev1.EnvVar{{Name: h.Unknown, ValueFrom: &corev1.EnvVarSource{}}}
	}
	return command, env
}
