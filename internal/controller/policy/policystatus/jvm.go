package policystatus

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/jvm"
)

// HeapFit is what one pod's container's JVM heap makes of its memory
// limit (jvm.JudgeFit).
type HeapFit struct {
	Pod, Container string
	Fit            jvm.Fit
}

// setJVMHeap sets the JVMHeapRestartAdvised condition: per container
// name, the advice of the pod whose limit is furthest above its heap's
// reach (by name on a tie), and how many pods share it, so that the
// message is the same whatever order the pods were read in. Absent where
// no pod runs a JVM.
func setJVMHeap(status *v1alpha1.TailorPolicyStatus, jvms bool, fits []HeapFit, pods, gen int64) {
	if !jvms {
		meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionJVMHeapRestartAdvised)
		return
	}
	if len(fits) == 0 {
		SetCondition(status, v1alpha1.ConditionJVMHeapRestartAdvised, metav1.ConditionFalse, "HeapFitsLimit", "every JVM's heap can use its memory limit", gen)
		return
	}
	type byName struct {
		first HeapFit
		n     int
	}
	worst := map[string]*byName{}
	over := func(f HeapFit) int64 { return f.Fit.Limit.Value() - f.Fit.Reach.Value() }
	for _, f := range fits {
		w, ok := worst[f.Container]
		switch {
		case !ok:
			worst[f.Container] = &byName{first: f, n: 1}
			continue
		case over(f) > over(w.first) || over(f) == over(w.first) && f.Pod < w.first.Pod:
			w.first = f
		}
		w.n++
	}
	names := make([]string, 0, len(worst))
	for n := range worst {
		names = append(names, n)
	}
	sort.Strings(names)
	var msgs []string
	for _, n := range names {
		w := worst[n]
		msgs = append(msgs, fmt.Sprintf("container %s (pod %s, %d of %d pods): %s", n, w.first.Pod, w.n, pods, w.first.Fit.Message))
	}
	SetCondition(status, v1alpha1.ConditionJVMHeapRestartAdvised, metav1.ConditionTrue, string(worst[names[0]].first.Fit.Reason),
		strings.Join(msgs, "; ")+"; tailor report -o patch writes the option into the template", gen)
}
