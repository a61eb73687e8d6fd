package deploy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/tailorhq/tailor/test/cluster"
)

// The JVM mode, off by default, adds to the agent exactly what
// docs/agent.md says it does: hostPID, user 0, and per mode its
// capabilities, with --jvm; everything else of the pod stays as
// checkAgentPod holds it. Helm's agent.jvm and the kustomize components
// render the same.
func TestAgentJVMMode(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-agent", "deploy-test-agent"
	kustomizeWith := func(component string) func(t *testing.T) []*unstructured.Unstructured {
		return func(t *testing.T) []*unstructured.Unstructured {
			overlay := filepath.Join(t.TempDir(), "agent")
			if err := os.MkdirAll(overlay, 0o755); err != nil {
				t.Fatal(err)
			}
			return kustomizeOverlay(t, overlay, map[string]any{
				"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
				"namespace": namespace + "-nodes", "namePrefix": release + "-",
				"resources":  []string{"config/agent"},
				"components": []string{"config/components/" + component},
			}, component)
		}
	}
	for name, tc := range map[string]struct {
		render func(t *testing.T) []*unstructured.Unstructured
		mode   string
		caps   []corev1.Capability
	}{
		"helm read": {render: func(t *testing.T) []*unstructured.Unstructured {
			return renderHelm(t, release, namespace, "agent.enabled=true", "agent.jvm=read")
		}, mode: "read", caps: []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}},
		"helm softmax": {render: func(t *testing.T) []*unstructured.Unstructured {
			return renderHelm(t, release, namespace, "agent.enabled=true", "agent.jvm=softmax")
		}, mode: "softmax", caps: []corev1.Capability{"SYS_PTRACE", "DAC_OVERRIDE", "KILL"}},
		"kustomize read":    {render: kustomizeWith("agent-jvm"), mode: "read", caps: []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}},
		"kustomize softmax": {render: kustomizeWith("agent-jvm-softmax"), mode: "softmax", caps: []corev1.Capability{"SYS_PTRACE", "DAC_OVERRIDE", "KILL"}},
	} {
		t.Run(name, func(t *testing.T) {
			ds := daemonSet(t, tc.render(t))
			spec := ds.Spec.Template.Spec
			if !spec.HostPID || spec.HostNetwork || spec.HostIPC {
				t.Errorf("hostPID %t, hostNetwork %t, hostIPC %t: want hostPID alone", spec.HostPID, spec.HostNetwork, spec.HostIPC)
			}
			wantPod := &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false), RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
			if diff := cmp.Diff(wantPod, spec.SecurityContext); diff != "" {
				t.Errorf("pod securityContext (-want,+got):\n%s", diff)
			}
			c := spec.Containers[0]
			wantContainer := &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), RunAsNonRoot: ptr.To(false),
				Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: tc.caps},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			}
			if diff := cmp.Diff(wantContainer, c.SecurityContext); diff != "" {
				t.Errorf("container securityContext (-want,+got):\n%s", diff)
			}
			if c.SecurityContext.Privileged != nil {
				t.Errorf("privileged set")
			}
			// Apart from the pod's and container's security, the pod is the
			// default one.
			spec.HostPID, spec.SecurityContext = false, &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65534), RunAsGroup: ptr.To[int64](65534),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
			spec.Containers[0].SecurityContext.RunAsNonRoot, spec.Containers[0].SecurityContext.Capabilities.Add = ptr.To(true), nil
			checkAgentPod(t, spec)
			flags := parseVerb(t, "agent", expandArgs(t, c, ds.Namespace))
			if got := flags.Lookup("jvm").Value.String(); got != tc.mode {
				t.Errorf("--jvm=%s, want %s", got, tc.mode)
			}
		})
	}
	// Off by default: no --jvm, nothing of the above (TestAgentRender holds
	// the rest).
	ds := daemonSet(t, renderHelm(t, release, namespace, "agent.enabled=true"))
	if got := parseVerb(t, "agent", expandArgs(t, ds.Spec.Template.Spec.Containers[0], namespace)).Lookup("jvm").Value.String(); got != "off" {
		t.Errorf("default --jvm=%s, want off", got)
	}
}

// daemonSet is the one DaemonSet among objs, typed.
func daemonSet(t *testing.T, objs []*unstructured.Unstructured) *appsv1.DaemonSet {
	t.Helper()
	var ds *appsv1.DaemonSet
	for _, o := range objs {
		if o.GetKind() != "DaemonSet" {
			continue
		}
		if ds != nil {
			t.Fatalf("two DaemonSets rendered")
		}
		ds = &appsv1.DaemonSet{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, ds, true); err != nil {
			t.Fatal(err)
		}
	}
	if ds == nil {
		t.Fatal("no agent DaemonSet rendered")
	}
	return ds
}
