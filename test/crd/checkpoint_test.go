//go:build e2e

package crd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/test/cluster"
)

var checkpointGVR = v1alpha1.GroupVersion.WithResource("tailorcheckpoints")

// minimalCheckpoint is a valid checkpoint spec for a TailorCheckpoint named
// "p"; each invalid case changes one thing in it.
const minimalCheckpoint = `
policyName: p
policyUID: 0b0c6f5e-4a4e-4b8e-9a55-2f4c5f0e7a10
writeTime: "2026-01-01T00:00:00Z"
`

// checkpointContainers is minimalCheckpoint with the given containers list.
func checkpointContainers(items string) string {
	return minimalCheckpoint + "containers:\n" + items
}

// stateOf is a base64 state of n bytes, as the JSON of a []byte field.
func stateOf(n int) string {
	return strings.Repeat("AAAA", n/3)
}

// checkpoint returns a TailorCheckpoint with the given name and spec,
// written as YAML like policy.
func checkpoint(name, specYAML string) *unstructured.Unstructured {
	var spec map[string]any
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		panic(fmt.Sprintf("test spec is not YAML: %v\n%s", err, specYAML))
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "TailorCheckpoint",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       spec,
	}}
}

func dryRunCreateCheckpoint(ctx context.Context, obj *unstructured.Unstructured) error {
	_, err := dyn.Resource(checkpointGVR).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// TestCheckpointRejected covers every validation rule of the
// TailorCheckpoint CRD. Only the manager writes checkpoints, so these are
// the manager's bugs the apiserver catches, not users' mistakes.
func TestCheckpointRejected(t *testing.T) {
	cluster.Shared(t)
	const item = "  - {name: app, state: AQID, updateTime: \"2026-01-01T00:00:00Z\"}\n"
	cases := map[string]struct {
		name string // default "p"
		spec string
		want []string
		// notDecoded: the JSON decoder, not validation, refuses the
		// object; only the refusal is checked, not its wording.
		notDecoded bool
	}{
		"named after another policy": {
			name: "q",
			spec: minimalCheckpoint,
			want: []string{"<nil>: Invalid value: a TailorCheckpoint must have the name of its TailorPolicy"},
		},
		"without policyUID": {
			spec: "policyName: p\nwriteTime: \"2026-01-01T00:00:00Z\"\n",
			want: []string{"spec.policyUID: Required value", notAllChecked},
		},
		"without writeTime": {
			spec: "policyName: p\npolicyUID: u\n",
			want: []string{"spec.writeTime: Required value", notAllChecked},
		},
		"a container twice": {
			spec: checkpointContainers(item + item),
			want: []string{`spec.containers[1]: Duplicate value: {"name":"app"}`},
		},
		"a container name that is no DNS label": {
			spec: checkpointContainers("  - {name: App_1, state: AQID, updateTime: \"2026-01-01T00:00:00Z\"}\n"),
			want: []string{`spec.containers[0].name: Invalid value: "App_1": name must be a container name (a DNS label) or _pod`},
		},
		"an empty state": {
			spec: checkpointContainers("  - {name: app, state: \"\", updateTime: \"2026-01-01T00:00:00Z\"}\n"),
			// The apiserver names the byte format too, in its own words.
			want: []string{`spec.containers[0].state: Invalid value: "": spec.containers[0].state in body should be at least 1 chars long`,
				`spec.containers[0].state: Invalid value: "": spec.containers[0].state in body must be of type byte: ""`, notAllChecked},
		},
		"a state over 2048 characters": {
			spec: checkpointContainers("  - {name: app, state: " + stateOf(1539) + ", updateTime: \"2026-01-01T00:00:00Z\"}\n"),
			want: []string{"spec.containers[0].state: Too long: may not be more than 2048 bytes", notAllChecked},
		},
		"a state that is not base64": {
			spec:       checkpointContainers("  - {name: app, state: \"not base64!\", updateTime: \"2026-01-01T00:00:00Z\"}\n"),
			notDecoded: true,
		},
		"a node class twice": {
			spec: minimalCheckpoint + "nodeClasses:\n  - {class: m5.large}\n  - {class: m5.large}\n",
			want: []string{`spec.nodeClasses[1]: Duplicate value: {"class":"m5.large"}`},
		},
		"more than 16 node classes": {
			spec: minimalCheckpoint + "nodeClasses:\n" + manyClasses(17, 1),
			want: []string{"spec.nodeClasses: Too many: 17: must have at most 16 items", notAllChecked},
		},
		"a node class's container name that is no DNS label": {
			spec: minimalCheckpoint + "nodeClasses:\n  - class: m5.large\n    containers: [{name: app@m5.large, state: AQID, updateTime: \"2026-01-01T00:00:00Z\"}]\n",
			want: []string{`spec.nodeClasses[0].containers[0].name: Invalid value: "app@m5.large": name must be a container name (a DNS label) or _pod`},
		},
		"more than 64 containers": {
			spec: checkpointContainers(manyContainers(65)),
			want: []string{"spec.containers: Too many: 65: must have at most 64 items", notAllChecked},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			objName := tc.name
			if objName == "" {
				objName = "p"
			}
			err := dryRunCreateCheckpoint(context.Background(), checkpoint(objName, tc.spec))
			if err == nil {
				t.Fatalf("the apiserver accepted:\n%s", tc.spec)
			}
			if tc.notDecoded {
				return
			}
			got := causes(err)
			sort.Strings(got)
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rejection (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestCheckpointAccepted covers the edges the rules must let through.
func TestCheckpointAccepted(t *testing.T) {
	cluster.Shared(t)
	cases := map[string]string{
		"no containers yet":                minimalCheckpoint,
		"a container":                      checkpointContainers("  - {name: app, state: AQID, updateTime: \"2026-01-01T00:00:00Z\"}\n"),
		"pod-level resources":              checkpointContainers("  - {name: _pod, state: AQID, updateTime: \"2026-01-01T00:00:00Z\"}\n"),
		"a state of 2048":                  checkpointContainers("  - {name: app, state: " + stateOf(1536) + ", updateTime: \"2026-01-01T00:00:00Z\"}\n"),
		"64 containers":                    checkpointContainers(manyContainers(64)),
		"63-character name":                checkpointContainers("  - {name: " + strings.Repeat("a", 63) + ", state: AQID, updateTime: \"2026-01-01T00:00:00Z\"}\n"),
		"16 node classes of 16 containers": minimalCheckpoint + "nodeClasses:\n" + manyClasses(16, 16),
		"digits and dashes ok":             checkpointContainers("  - {name: 1-app-2, state: AQID, updateTime: \"2026-01-01T00:00:00Z\"}\n"),
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if err := dryRunCreateCheckpoint(context.Background(), checkpoint("p", spec)); err != nil {
				t.Errorf("rejected: %v\n%s", err, spec)
			}
		})
	}
}

func manyContainers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  - {name: c%d, state: AQID, updateTime: \"2026-01-01T00:00:00Z\"}\n", i)
	}
	return b.String()
}

// manyClasses is n node classes of a checkpoint, each with containers
// containers of the largest state.
func manyClasses(n, containers int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  - class: c%d.large\n    containers:\n", i)
		for j := range containers {
			fmt.Fprintf(&b, "      - {name: c%d, state: %s, updateTime: \"2026-01-01T00:00:00Z\"}\n", j, stateOf(1536))
		}
	}
	return b.String()
}
