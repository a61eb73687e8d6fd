package manifests

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Applier sends objects to one apiserver by server-side apply, every
// request with fieldValidation=Strict, and reports the warnings the
// apiserver answered each with (a deprecated API, a pod template that
// breaks its namespace's Pod Security warn level, a field dropped).
type Applier struct {
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
	// FieldManager names the applier in managedFields.
	FieldManager string
}

type warningsKey struct{}

// warnings collects the warnings of the requests made with its context.
type warnings struct {
	mu   sync.Mutex
	text []string
}

type contextWarnings struct{}

func (contextWarnings) HandleWarningHeaderWithContext(ctx context.Context, _ int, _ string, text string) {
	if w, ok := ctx.Value(warningsKey{}).(*warnings); ok {
		w.mu.Lock()
		w.text = append(w.text, text)
		w.mu.Unlock()
	}
}

// NewApplier makes an Applier for the apiserver cfg names (cfg is copied:
// its warning handler is replaced by one that reports each request's
// warnings to its caller).
func NewApplier(cfg *rest.Config, fieldManager string) (*Applier, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler, cfg.WarningHandlerWithContext = nil, contextWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), FieldManager: fieldManager}, nil
}

// Result is what the apiserver answered one apply with.
type Result struct {
	// Object is the object as the apiserver would store it (after
	// defaulting and mutating admission).
	Object *unstructured.Unstructured
	// Warnings are the apiserver's warnings on the request.
	Warnings []string
}

// DryRun applies o as a server-side dry run: every admission and
// validation step runs, nothing is stored.
func (a *Applier) DryRun(ctx context.Context, o *unstructured.Unstructured) (Result, error) {
	return a.apply(ctx, o, true)
}

// Apply applies o for real.
func (a *Applier) Apply(ctx context.Context, o *unstructured.Unstructured) (Result, error) {
	return a.apply(ctx, o, false)
}

func (a *Applier) apply(ctx context.Context, o *unstructured.Unstructured, dryRun bool) (Result, error) {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// A CRD installed since the mapper last looked.
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s %s: the apiserver does not serve it: %w", gvk.Kind, o.GetName(), err)
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() == "" {
			return Result{}, fmt.Errorf("%s %s is namespaced and rendered without a namespace", gvk.Kind, o.GetName())
		}
		ri = a.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	// A cluster-scoped object rendered with a namespace goes to its
	// cluster-scoped path, as kubectl and helm send it, and the apiserver
	// ignores the namespace: kustomize's namespace transformer sets one on
	// kinds it does not know to be cluster-scoped (MutatingAdmissionPolicy
	// among them, in the kustomize of kubectl 1.37).
	data, err := json.Marshal(o.Object)
	if err != nil {
		return Result{}, err
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: a.FieldManager, Force: &force, FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	w := &warnings{}
	got, err := ri.Patch(context.WithValue(ctx, warningsKey{}, w), o.GetName(), types.ApplyPatchType, data, opts)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		return Result{Warnings: w.text}, fmt.Errorf("applying %s %s (dry run %t): %w", gvk.Kind, Name(o), dryRun, err)
	}
	return Result{Object: got, Warnings: w.text}, nil
}

// Name is an object's namespace/name, or its name when cluster-scoped.
func Name(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
