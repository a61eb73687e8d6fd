package manifest

import (
	"bytes"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Ref names one workload object.
type Ref struct {
	APIVersion, Kind, Namespace, Name string
}

// String is "shop/deployment/web", or "deployment/web" without a namespace.
func (r Ref) String() string {
	s := strings.ToLower(r.Kind) + "/" + r.Name
	if r.Namespace != "" {
		s = r.Namespace + "/" + s
	}
	return s
}

// templatePaths are where each kind keeps the pod template its pods are
// created from.
var templatePaths = map[string][]string{
	"Deployment":            {"spec", "template"},
	"StatefulSet":           {"spec", "template"},
	"DaemonSet":             {"spec", "template"},
	"ReplicaSet":            {"spec", "template"},
	"ReplicationController": {"spec", "template"},
	"Job":                   {"spec", "template"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template"},
}

// apiVersions are the versions the kinds with a template are served at.
var apiVersions = map[string]string{
	"Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "ReplicaSet": "apps/v1",
	"ReplicationController": "v1", "Job": "batch/v1", "CronJob": "batch/v1",
}

// TemplatePath is where objects of kind keep their pod template (spec,
// template for a Deployment), and false for a kind without one tailor knows
// (a bare Pod, a custom resource).
func TemplatePath(kind string) ([]string, bool) {
	p, ok := templatePaths[kind]
	return p, ok
}

// APIVersionOf is the apiVersion a kind with a pod template is written
// with; "" for another kind.
func APIVersionOf(kind string) string { return apiVersions[kind] }

// Container is what one container of a template is to be given: only the
// entries that change (a value equal to the template's is left out, so a
// LimitRange default the manifest leaves unset stays unset).
type Container struct {
	Name string
	// Init is a container of initContainers (a sidecar); else of
	// containers.
	Init             bool
	Requests, Limits corev1.ResourceList
	// Command and Args replace the container's whole lists where set (a
	// JVM's heap option moved: jvm.SetOption), and Env's variables are
	// merged into its own by name.
	Command, Args []string
	Env           []corev1.EnvVar
}

// Change is one workload's: the containers to change and a comment that
// says what and why, written above its patch.
type Change struct {
	Ref        Ref
	Containers []Container
	// Names and InitNames are every container and init container of the
	// template, in its order. A patch of a list names all of its
	// containers, the others by name only, so that merging it keeps their
	// order: kustomize puts the entries a patch names first, and the
	// order of init containers is the order they run in. Nil: the changed
	// containers only.
	Names, InitNames []string
	Comment          []string
}

// Patch writes changes as a YAML stream of strategic-merge patches, one
// document per workload: apiVersion, kind, metadata (name, and namespace
// when the Ref has one) and the template's containers by name, each with
// the resources it changes, and the command, args or variables it is
// given. Containers merge by name, so the patch touches
// nothing else of the object; as a kustomize patch (patches: - path: FILE)
// it matches the resource of the same kind, name and namespace.
func Patch(changes []Change) ([]byte, error) {
	var out bytes.Buffer
	for i, ch := range changes {
		doc, err := patchDoc(ch)
		if err != nil {
			return nil, fmt.Errorf("patch of %s: %w", ch.Ref, err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		for _, c := range ch.Comment {
			for _, line := range strings.Split(c, "\n") {
				out.WriteString(strings.TrimRight("# "+line, " ") + "\n")
			}
		}
		out.Write(doc)
	}
	return out.Bytes(), nil
}

func patchDoc(ch Change) ([]byte, error) {
	path, ok := TemplatePath(ch.Ref.Kind)
	if !ok {
		return nil, fmt.Errorf("kind %s has no pod template tailor knows", ch.Ref.Kind)
	}
	if len(ch.Containers) == 0 {
		return nil, fmt.Errorf("no container changes")
	}
	changed := map[bool]map[string]map[string]any{false: {}, true: {}}
	var order [2][]string
	for _, c := range ch.Containers {
		res := map[string]any{}
		if l := quantities(c.Requests); len(l) > 0 {
			res["requests"] = l
		}
		if l := quantities(c.Limits); len(l) > 0 {
			res["limits"] = l
		}
		entry := map[string]any{}
		if len(res) > 0 {
			entry["resources"] = res
		}
		if c.Command != nil {
			entry["command"] = c.Command
		}
		if c.Args != nil {
			entry["args"] = c.Args
		}
		if len(c.Env) > 0 {
			env := make([]any, 0, len(c.Env))
			for _, e := range c.Env {
				if e.ValueFrom != nil {
					return nil, fmt.Errorf("container %s: variable %s is not a value", c.Name, e.Name)
				}
				env = append(env, map[string]any{"name": e.Name, "value": e.Value})
			}
			entry["env"] = env
		}
		if len(entry) == 0 {
			return nil, fmt.Errorf("container %s changes nothing", c.Name)
		}
		changed[c.Init][c.Name] = entry
		i := 0
		if c.Init {
			i = 1
		}
		order[i] = append(order[i], c.Name)
	}
	list := func(init bool, names, fallback []string) ([]any, error) {
		if len(changed[init]) == 0 {
			return nil, nil
		}
		if names == nil {
			names = fallback
		}
		var out []any
		for _, n := range names {
			entry := map[string]any{"name": n}
			if fields, ok := changed[init][n]; ok {
				for k, v := range fields {
					entry[k] = v
				}
				delete(changed[init], n)
			}
			out = append(out, entry)
		}
		for n := range changed[init] {
			return nil, fmt.Errorf("container %s is not one of the template's", n)
		}
		return out, nil
	}
	containers, err := list(false, ch.Names, order[0])
	if err != nil {
		return nil, err
	}
	inits, err := list(true, ch.InitNames, order[1])
	if err != nil {
		return nil, err
	}
	podSpec := map[string]any{}
	if len(containers) > 0 {
		podSpec["containers"] = containers
	}
	if len(inits) > 0 {
		podSpec["initContainers"] = inits
	}
	var node any = map[string]any{"spec": podSpec}
	for i := len(path) - 1; i >= 0; i-- {
		node = map[string]any{path[i]: node}
	}
	meta := map[string]any{"name": ch.Ref.Name}
	if ch.Ref.Namespace != "" {
		meta["namespace"] = ch.Ref.Namespace
	}
	apiVersion := ch.Ref.APIVersion
	if apiVersion == "" {
		apiVersion = APIVersionOf(ch.Ref.Kind)
	}
	obj := node.(map[string]any)
	obj["apiVersion"], obj["kind"], obj["metadata"] = apiVersion, ch.Ref.Kind, meta
	return yaml.Marshal(obj)
}

// quantities is a resource list as strings, cpu and memory only.
func quantities(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := l[r]; ok {
			out[string(r)] = q.String()
		}
	}
	return out
}
