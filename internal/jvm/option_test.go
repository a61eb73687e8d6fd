package jvm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestSetOption(t *testing.T) {
	env := func(name, value string) []corev1.EnvVar { return []corev1.EnvVar{{Name: name, Value: value}} }
	cases := map[string]struct {
		c       corev1.Container
		option  string
		want    OptionEdit
		wantErr bool
	}{
		"-Xmx in the command": {
			c:      corev1.Container{Command: []string{"java", "-Xmx256m", "-jar", "app.jar"}},
			option: "-Xmx1587m",
			want:   OptionEdit{Command: []string{"java", "-Xmx1587m", "-jar", "app.jar"}},
		},
		"the last of two in the arguments": {
			c:      corev1.Container{Command: []string{"java"}, Args: []string{"-Xmx1g", "-Xmx512m", "Main"}},
			option: "-Xmx768m",
			want:   OptionEdit{Args: []string{"-Xmx1g", "-Xmx768m", "Main"}},
		},
		"within a shell's line, spaces kept": {
			c:      corev1.Container{Command: []string{"/bin/sh", "-c", "exec  java -XX:MaxRAMPercentage=50.0\t-jar /app.jar"}},
			option: "-XX:MaxRAMPercentage=75",
			want:   OptionEdit{Command: []string{"/bin/sh", "-c", "exec  java -XX:MaxRAMPercentage=75\t-jar /app.jar"}},
		},
		"in JAVA_TOOL_OPTIONS": {
			c:      corev1.Container{Command: []string{"java", "Main"}, Env: env("JAVA_TOOL_OPTIONS", "-XX:+UseZGC -XX:MaxHeapSize=512m -Dx=1")},
			option: "-XX:MaxHeapSize=900m",
			want:   OptionEdit{Env: &corev1.EnvVar{Name: "JAVA_TOOL_OPTIONS", Value: "-XX:+UseZGC -XX:MaxHeapSize=900m -Dx=1"}},
		},
		"_JAVA_OPTIONS overriding the command line": {
			c:      corev1.Container{Command: []string{"java", "-Xmx128m", "Main"}, Env: env("_JAVA_OPTIONS", "-Xmx64m")},
			option: "-Xmx300m",
			want:   OptionEdit{Env: &corev1.EnvVar{Name: "_JAVA_OPTIONS", Value: "-Xmx300m"}},
		},
		"the default share: added to JAVA_TOOL_OPTIONS": {
			c:      corev1.Container{Command: []string{"java", "-jar", "app.jar"}},
			option: "-XX:MaxRAMPercentage=77",
			want:   OptionEdit{Env: &corev1.EnvVar{Name: "JAVA_TOOL_OPTIONS", Value: "-XX:MaxRAMPercentage=77"}},
		},
		"the default share: appended to JAVA_TOOL_OPTIONS": {
			c:      corev1.Container{Command: []string{"java", "-jar", "app.jar"}, Env: env("JAVA_TOOL_OPTIONS", "-XX:+UseG1GC")},
			option: "-XX:MaxRAMPercentage=77",
			want:   OptionEdit{Env: &corev1.EnvVar{Name: "JAVA_TOOL_OPTIONS", Value: "-XX:+UseG1GC -XX:MaxRAMPercentage=77"}},
		},
		"a JVM the spec does not show": {
			c:       corev1.Container{Name: "app", Command: []string{"/app/start.sh"}},
			option:  "-Xmx512m",
			wantErr: true,
		},
		"options from a ConfigMap": {
			c: corev1.Container{Command: []string{"java", "-Xmx128m", "Main"}, Env: []corev1.EnvVar{{Name: "_JAVA_OPTIONS",
				ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "opts"}}}}},
			option:  "-Xmx512m",
			wantErr: true,
		},
		"an option that would not read back": {
			c:       corev1.Container{Command: []string{"java", "-Xmx128m", "Main"}},
			option:  "-Xmx12q",
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.c.DeepCopy()
			got, err := SetOption(&tc.c, tc.option)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if err != nil {
				t.Log(err)
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(before, &tc.c); diff != "" {
				t.Errorf("the container was changed (-before,+after):\n%s", diff)
			}
			if h := HeapOf(got.Apply(&tc.c)); h.Option != tc.option {
				t.Errorf("reads back as %q", h.Option)
			}
		})
	}
}
