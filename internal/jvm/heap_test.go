package jvm

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tailorhq/tailor/internal/jvm/softmax"
	"github.com/tailorhq/tailor/internal/propertytest"
	corev1 "k8s.io/api/core/v1"
)

func TestHeapOf(t *testing.T) {
	env := func(kv ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for i := 0; i < len(kv); i += 2 {
			out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	type want struct {
		JVM             bool
		Max             string
		Option, Unknown string
	}
	cases := map[string]struct {
		c    corev1.Container
		want want
	}{
		"not a JVM": {
			c:    corev1.Container{Command: []string{"redis-server"}, Args: []string{"--maxmemory", "100mb"}},
			want: want{},
		},
		"-Xmx on the command line": {
			c:    corev1.Container{Command: []string{"/opt/java/bin/java", "-Xmx96m", "-jar", "/app/service.jar"}},
			want: want{JVM: true, Max: "96Mi", Option: "-Xmx96m"},
		},
		"the last -Xmx wins": {
			c:    corev1.Container{Command: []string{"java"}, Args: []string{"-Xmx1g", "-Xmx512m", "-jar", "app.jar"}},
			want: want{JVM: true, Max: "512Mi", Option: "-Xmx512m"},
		},
		"-XX:MaxHeapSize in bytes": {
			c:    corev1.Container{Command: []string{"java", "-XX:MaxHeapSize=268435456", "Main"}},
			want: want{JVM: true, Max: "256Mi", Option: "-XX:MaxHeapSize=268435456"},
		},
		"through a shell": {
			c:    corev1.Container{Command: []string{"/bin/sh", "-c", "exec java -Xmx2G -jar /app.jar"}},
			want: want{JVM: true, Max: "2Gi", Option: "-Xmx2G"},
		},
		"sized from the limit": {
			c:    corev1.Container{Command: []string{"java", "-XX:MaxRAMPercentage=75.0", "-jar", "app.jar"}},
			want: want{JVM: true, Option: "-XX:MaxRAMPercentage=75.0"},
		},
		"the JVM's default 25% of the limit": {
			c:    corev1.Container{Args: []string{"java", "-jar", "app.jar"}},
			want: want{JVM: true},
		},
		"-Xmx wins over MaxRAMPercentage in either order": {
			c:    corev1.Container{Command: []string{"java", "-Xmx300m", "-XX:MaxRAMPercentage=75.0", "Main"}},
			want: want{JVM: true, Max: "300Mi", Option: "-Xmx300m"},
		},
		"JAVA_TOOL_OPTIONS, which the command line overrides": {
			c:    corev1.Container{Command: []string{"java", "-Xmx128m", "Main"}, Env: env("JAVA_TOOL_OPTIONS", "-Xmx1g -XX:+UseZGC")},
			want: want{JVM: true, Max: "128Mi", Option: "-Xmx128m"},
		},
		"_JAVA_OPTIONS, which overrides the command line": {
			c:    corev1.Container{Command: []string{"java", "-Xmx128m", "Main"}, Env: env("_JAVA_OPTIONS", "-Xmx64m")},
			want: want{JVM: true, Max: "64Mi", Option: "-Xmx64m"},
		},
		"a JVM told only by its options variable": {
			c:    corev1.Container{Command: []string{"/app/run"}, Env: env("JDK_JAVA_OPTIONS", "-Xmx768m")},
			want: want{JVM: true, Max: "768Mi", Option: "-Xmx768m"},
		},
		"options from a ConfigMap the spec does not hold": {
			c: corev1.Container{Command: []string{"java", "Main"}, Env: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS",
				ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "opts"}}}}},
			want: want{JVM: true, Unknown: "JAVA_TOOL_OPTIONS"},
		},
		"a size the JVM refuses leaves the default": {
			c:    corev1.Container{Command: []string{"java", "-Xmx12q", "Main"}},
			want: want{JVM: true},
		},
		"javac is not java": {
			c:    corev1.Container{Command: []string{"javac", "Main.java"}},
			want: want{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := HeapOf(&tc.c)
			got := want{JVM: h.JVM, Option: h.Option, Unknown: h.Unknown}
			if h.Max != nil {
				got.Max = h.Max.String()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
			// What a slim cache keeps of the container says the same.
			slim := corev1.Container{}
			slim.Command, slim.Env = Slim(&tc.c)
			if diff := cmp.Diff(h, HeapOf(&slim)); diff != "" {
				t.Errorf("HeapOf the slim container (-full,+slim):\n%s", diff)
			}
		})
	}
}

// TestMeasuredReachFitsTheWholeHeap: at the measured reach, the agent's soft
// heap bound (internal/jvm/softmax) is the heap's whole maximum, and a
// megabyte less would cut it: the decision and the agent agree on what
// "the heap fits" means. Over generated heaps and non-heaps.
func TestMeasuredReachFitsTheWholeHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(propertytest.DefaultSeed, 41))
	for range 10000 {
		// Heaps in whole granules, as the JVM sizes them.
		m := Measured{HeapMax: int64(1+r.IntN(8192)) * softmax.Granule, NonHeap: int64(r.IntN(2048)) << 20}
		reach := MeasuredReach(m)
		at := softmax.Decide(softmax.Input{Limit: reach.Value(), HeapMax: m.HeapMax, NonHeap: m.NonHeap})
		if at.Target != m.HeapMax {
			t.Fatalf("%+v: at the reach %d the soft bound is %d, not the heap's maximum", m, reach.Value(), at.Target)
		}
		under := softmax.Decide(softmax.Input{Limit: reach.Value() - 1<<20, HeapMax: m.HeapMax, NonHeap: m.NonHeap})
		if under.Target >= m.HeapMax {
			t.Fatalf("%+v: 1Mi under the reach %d the soft bound is still %d: the reach is not the least", m, reach.Value(), under.Target)
		}
	}
}
