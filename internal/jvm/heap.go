package jvm

import (
	"strconv"
	"strings"
	"unicode"

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
	h, _ := heapOf(c)
	return h
}

// heapOf is HeapOf, and where the option that sets the heap's maximum (or
// its share of the limit) sits in the spec, nil when none does.
func heapOf(c *corev1.Container) (Heap, *word) {
	var h Heap
	words, jvm, unknown := optionWords(c)
	if !jvm {
		return Heap{}, nil
	}
	h.JVM, h.Unknown = true, unknown
	var at *word
	for i := range words {
		w := &words[i]
		o := w.text
		switch {
		case strings.HasPrefix(o, "-Xmx"):
			if h.set(o, strings.TrimPrefix(o, "-Xmx")) {
				at = w
			}
		case strings.HasPrefix(o, "-XX:MaxHeapSize="):
			if h.set(o, strings.TrimPrefix(o, "-XX:MaxHeapSize=")) {
				at = w
			}
		case strings.HasPrefix(o, "-XX:MaxRAMPercentage="):
			if h.Max == nil {
				h.Option, at = o, w
			}
		}
	}
	return h, at
}

// word is one of the JVM's options and where c's spec holds it: in the
// variable Env (Index into c.Env), else in c.Command or c.Args (Field,
// Index), at bytes [Start, End) of that string.
type word struct {
	text       string
	env        string
	field      string
	index      int
	start, end int
}

// optionWords are the words of c's JVM options in the order the JVM applies
// them, whether c runs a JVM at all, and the last option variable whose
// value the spec does not hold.
func optionWords(c *corev1.Container) ([]word, bool, string) {
	var words []word
	jvm, unknown := false, ""
	fromEnv := func(names []string) {
		for _, n := range names {
			i := envIndex(c, n)
			if i < 0 {
				continue
			}
			e := &c.Env[i]
			jvm = true
			if e.ValueFrom != nil {
				unknown = n
				continue
			}
			for _, f := range fields(e.Value) {
				words = append(words, word{text: e.Value[f[0]:f[1]], env: n, index: i, start: f[0], end: f[1]})
			}
		}
	}
	fromEnv(before)
	if line := append(append([]string(nil), c.Command...), c.Args...); runsJava(line) {
		jvm = true
		for i, s := range line {
			field, index := "command", i
			if i >= len(c.Command) {
				field, index = "args", i-len(c.Command)
			}
			for _, f := range fields(s) {
				words = append(words, word{text: s[f[0]:f[1]], field: field, index: index, start: f[0], end: f[1]})
			}
		}
	}
	fromEnv(after)
	return words, jvm, unknown
}

// envIndex is the index of c's variable name, -1 when it has none; of a
// name given twice, the container gets the last.
func envIndex(c *corev1.Container, name string) int {
	for i := len(c.Env) - 1; i >= 0; i-- {
		if c.Env[i].Name == name {
			return i
		}
	}
	return -1
}

// fields are the spans of s's words, as strings.Fields splits them.
func fields(s string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		space := unicode.IsSpace(r)
		switch {
		case space && start >= 0:
			out = append(out, [2]int{start, i})
			start = -1
		case !space && start < 0:
			start = i
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}

// set records a maximum heap option, and says whether it did: a size the
// JVM would refuse leaves what was there.
func (h *Heap) set(option, size string) bool {
	q, ok := parseSize(size)
	if ok {
		h.Max, h.Option = &q, option
	}
	return ok
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
