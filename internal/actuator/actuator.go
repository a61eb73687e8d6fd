package actuator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tailorhq/tailor/internal/resize"
)

// Mode is how a server accepts in-place resizes.
type Mode string

const (
	// ModeSubresource: 1.33+, the pods/resize subresource. It is the only
	// mode: 1.27-1.32 resized through a pod patch behind an alpha gate,
	// with other semantics (no admission check, other conditions), which
	// tailor does not support.
	ModeSubresource Mode = "resize-subresource"
)

// FieldManager is the field manager tailor's resizes are recorded under in
// a pod's managedFields: the time of its entry for the resize subresource
// is when tailor last resized the pod, which a restarted manager reads back.
const FieldManager = "tailor"

// Server is what the actuator needs to know about the apiserver.
type Server struct {
	Version    resize.Version
	GitVersion string
	Mode       Mode
}

// ErrUnsupported means the server cannot resize pods in place at all.
var ErrUnsupported = errors.New("in-place pod resize is unavailable")

// Discover asks the apiserver for its version and whether it serves
// pods/resize, which is the reliable signal: a version alone does not say
// whether a gate is on.
func Discover(dc discovery.DiscoveryInterface) (Server, error) {
	v, err := dc.ServerVersion()
	if err != nil {
		return Server{}, fmt.Errorf("reading the server version: %w", err)
	}
	s := Server{GitVersion: v.GitVersion}
	if s.Version, err = resize.ParseVersion(v.Major + "." + v.Minor); err != nil {
		return Server{}, fmt.Errorf("reading the server version: %w", err)
	}
	resources, err := dc.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return Server{}, fmt.Errorf("listing core/v1 resources: %w", err)
	}
	for _, r := range resources.APIResources {
		if r.Name == "pods/resize" {
			s.Mode = ModeSubresource
			return s, nil
		}
	}
	return s, fmt.Errorf("%w on Kubernetes %s: the pods/resize subresource is served from 1.33 on", ErrUnsupported, v.GitVersion)
}

// Refusal is a resize the apiserver turned down. Kind says which part.
type Refusal struct {
	Kind    RefusalKind
	Message string
	// Causes are the apiserver's machine-readable causes (e.g. NodeCapacity).
	Causes []string
	Err    error
}

// RefusalKind classifies why the apiserver said no.
type RefusalKind string

const (
	// RefusedAdmission: an admission plugin refused it, e.g. the resize does
	// not fit the node's allocatable (1.36+).
	RefusedAdmission RefusalKind = "Admission"
	// RefusedValidation: the resize breaks a validation rule (422).
	RefusedValidation RefusalKind = "Validation"
	// RefusedPermission: the caller lacks RBAC for pods/resize.
	RefusedPermission RefusalKind = "Permission"
	// RefusedConflict: the pod changed since the plan was made (409).
	RefusedConflict RefusalKind = "Conflict"
)

func (r *Refusal) Error() string {
	switch r.Kind {
	case RefusedPermission:
		return r.Message + ` (grant "patch" on "pods/resize", and "get" on "pods", to this identity)`
	case RefusedConflict:
		return "the pod changed after the resize was planned; plan again from the current pod: " + r.Message
	}
	return fmt.Sprintf("refused at %s: %s", strings.ToLower(string(r.Kind)), r.Message)
}

func (r *Refusal) Unwrap() error { return r.Err }

// classify turns an apiserver error into a Refusal where it is one.
func classify(err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err
	}
	st := status.Status()
	var causes []string
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Type != "" {
				causes = append(causes, string(c.Type))
			}
		}
	}
	r := &Refusal{Message: st.Message, Causes: causes, Err: err}
	switch {
	case apierrors.IsConflict(err):
		r.Kind = RefusedConflict
	case apierrors.IsInvalid(err):
		r.Kind = RefusedValidation
	case apierrors.IsForbidden(err) && strings.Contains(st.Message, "cannot patch resource"):
		r.Kind = RefusedPermission
	case apierrors.IsForbidden(err):
		r.Kind = RefusedAdmission
	default:
		return err
	}
	return r
}

// Actuator sends resizes and follows them.
type Actuator struct {
	Client client.WithWatch
	Server Server
}

// ApplyOptions tune one Apply.
type ApplyOptions struct {
	// DryRun submits the patch as a server-side dry run: the apiserver
	// validates and admits it but stores nothing.
	DryRun bool
	// FieldManager records the resize under another field manager than
	// FieldManager (a startup boost's); empty means FieldManager.
	FieldManager string
}

// Apply sends patch, the body built by the planner, for pod. The patch
// carries the pod's resourceVersion, so a plan made from a stale pod is
// refused with a Conflict instead of applied blindly. It returns the pod as
// the apiserver stored it (or would have, for a dry run).
func (a *Actuator) Apply(ctx context.Context, pod *corev1.Pod, patch []byte, opts ApplyOptions) (*corev1.Pod, error) {
	if len(patch) == 0 {
		return nil, errors.New("empty resize patch: nothing to apply")
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	raw := client.RawPatch(types.StrategicMergePatchType, patch)
	if a.Server.Mode != ModeSubresource {
		return nil, fmt.Errorf("%w: unknown server mode %q", ErrUnsupported, a.Server.Mode)
	}
	manager := FieldManager
	if opts.FieldManager != "" {
		manager = opts.FieldManager
	}
	po := []client.SubResourcePatchOption{client.FieldOwner(manager)}
	if opts.DryRun {
		po = append(po, client.DryRunAll)
	}
	err := a.Client.SubResource("resize").Patch(ctx, target, raw, po...)
	if err != nil {
		return nil, fmt.Errorf("resizing pod %s/%s: %w", pod.Namespace, pod.Name, classify(err))
	}
	return target, nil
}

// Follow watches pod until its resize is Done, Infeasible or Error, or until
// ctx ends, and returns the last pod and observation. A Deferred resize is
// waited on, since the kubelet retries it when room appears; onChange, if
// set, is called whenever the observed state changes so callers can show it.
func (a *Actuator) Follow(ctx context.Context, pod *corev1.Pod, onChange func(*corev1.Pod, Observation)) (*corev1.Pod, Observation, error) {
	current := pod.DeepCopy()
	var last Observation
	if done, obs := a.step(current, pod.Generation, &last, onChange); done {
		return current, obs, nil
	}
	for {
		list := &corev1.PodList{}
		sel := fields.OneTermEqualSelector("metadata.name", pod.Name)
		w, err := a.Client.Watch(ctx, list, client.InNamespace(pod.Namespace), client.MatchingFieldsSelector{Selector: sel})
		if err != nil {
			return current, last, fmt.Errorf("watching pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		// A Get after the watch starts closes the window between the patch
		// and the watch.
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(pod), current); err != nil {
			w.Stop()
			return current, last, fmt.Errorf("reading pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		done, obs := a.step(current, pod.Generation, &last, onChange)
		if done {
			w.Stop()
			return current, obs, nil
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				w.Stop()
				return current, last, fmt.Errorf("pod %s/%s was deleted while its resize was in flight", pod.Namespace, pod.Name)
			case watch.Error:
				continue
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			current = p
			if done, obs := a.step(current, pod.Generation, &last, onChange); done {
				w.Stop()
				return current, obs, nil
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return current, last, fmt.Errorf("resize of pod %s/%s still %s: %w", pod.Namespace, pod.Name, last.State, ctx.Err())
		}
		// The watch closed (timeout on the server side): start another.
		select {
		case <-ctx.Done():
			return current, last, fmt.Errorf("resize of pod %s/%s still %s: %w", pod.Namespace, pod.Name, last.State, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// step observes p and reports whether following can stop. A state older than
// the generation the patch produced is not an answer yet.
func (a *Actuator) step(p *corev1.Pod, generation int64, last *Observation, onChange func(*corev1.Pod, Observation)) (bool, Observation) {
	obs := Observe(p)
	if obs.Generation < generation {
		obs = Observation{State: StateProposed, Generation: obs.Generation, Message: fmt.Sprintf("kubelet has observed generation %d of %d", obs.Generation, generation)}
	}
	if onChange != nil && (obs.State != last.State || obs.Message != last.Message) {
		onChange(p, obs)
	}
	*last = obs
	return obs.Terminal(), obs
}
