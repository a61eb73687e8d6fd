package advise

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/podcontainers"
	"github.com/tailorhq/tailor/internal/recommend"
)

// Model is one workload's learnt state: a recommender state per container
// name (podcontainers.PodLevelName for the pod-level resources), fed from every
// pod of the workload, so a new pod starts from what its siblings and
// predecessors taught, as VerticalPodAutoscaler's aggregate container state
// does.
type Model struct {
	// Base is the recommender configuration a container name gets when the
	// policy has none for it.
	Base recommend.Config
	// Configs is each container's recommender configuration, with the
	// policy's overrides applied, by container name.
	Configs map[string]recommend.Config
	// Containers is what is learnt of each container name, by Key: by
	// name and node class for a policy with spec.nodeClasses.
	Containers map[string]*Container
	// lead is NodeLead unless a test says otherwise (0: NodeLead).
	lead float64
}

// Container is what is learnt about one container of a workload.
type Container struct {
	State *recommend.State
	// Fed is the time of the newest usage fed.
	Fed time.Time
	// Changed is when the state last learnt something; a checkpoint is
	// written when it is newer than the last write.
	Changed time.Time
}

// PodMemory is what the model remembers of one pod between syncs.
type PodMemory struct {
	// LastEvent is the newest termination already fed to the recommender.
	LastEvent time.Time
	// BoostFrom is the cpu request a container had before tailor boosted
	// it in place, kept only while nothing else (a recommendation, the
	// template) says what to take the boost back to. Whether a request is
	// a boost is read from the pod (boost.Targets), not from here:
	// forgetting this only keeps such a boost until there is a
	// recommendation.
	BoostFrom map[string]resource.Quantity
	// Own is what the pod alone taught, by container name, from the first
	// read in which it led the workload's other nodes beyond NodeLead: it
	// sizes this pod beside the workload's state, and nothing else. Not
	// checkpointed: after a restart a pod's own state starts again at its
	// next such read.
	Own map[string]*Container
}

// NewPodMemory is the memory of a pod first seen: terminations from before
// tailor saw it are history the recommender cannot date against its samples.
func NewPodMemory(p *corev1.Pod) PodMemory {
	return PodMemory{LastEvent: p.CreationTimestamp.Time}
}

// Pod is one pod as the model sees it.
type Pod struct {
	Pod    *corev1.Pod
	Memory *PodMemory
	// LastResize is when tailor last resized it; zero when never.
	LastResize time.Time
	// Class is its node's class (spec.nodeClasses), "" when the policy
	// names none or the node is gone: it learns in, and is advised by, the
	// states of its class alone.
	Class string
}

// classSep joins a container name and a node class into the key of the
// state learnt for that name on that class: no container name (a DNS
// label), nor "_pod", has it.
const classSep = "@"

// Key is the key, in Containers, of the state that learns container name
// on nodes of class ("": on every node, the workload's).
func Key(name, class string) string {
	if class == "" {
		return name
	}
	return name + classSep + class
}

// SplitKey is the container name and the node class of a state's key.
func SplitKey(key string) (name, class string) {
	name, class, _ = strings.Cut(key, classSep)
	return name, class
}

// NewModel is an empty model whose container names get base unless the
// policy overrides it.
func NewModel(base recommend.Config) *Model {
	return &Model{Base: base, Configs: map[string]recommend.Config{}, Containers: map[string]*Container{}}
}

// ConfigError is a policy's recommender override that cannot be used: the
// user's to fix.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Configure gives every container name the pods have, and every name
// learnt, its recommender configuration, checked here so a bad override is
// a ConfigError before anything is learnt. A container whose configuration
// changed keeps what it learnt, carried over into the new windows.
func (m *Model) Configure(spec *v1alpha1.TailorPolicySpec, pods []*corev1.Pod) error {
	names := map[string]bool{}
	for _, p := range pods {
		for _, c := range podcontainers.Names(p) {
			names[c] = true
		}
		if p.Spec.Resources != nil {
			names[podcontainers.PodLevelName] = true
		}
	}
	for name := range m.Containers {
		names[name] = true
	}
	for name := range names {
		cfg, err := Config(m.Base, spec, ConfigName(name))
		if err != nil {
			return &ConfigError{Err: err}
		}
		old, had := m.Configs[name]
		m.Configs[name] = cfg
		wc, learnt := m.Containers[name]
		if !had || !learnt || old == cfg {
			continue
		}
		st, err := carryOver(wc.State, cfg)
		if err != nil {
			var invalid *ConfigError
			if errors.As(err, &invalid) {
				return err
			}
			return fmt.Errorf("carrying %s's state over a policy change: %w", name, err)
		}
		wc.State = st
	}
	return nil
}

// carryOver is what st learnt, under cfg.
func carryOver(st *recommend.State, cfg recommend.Config) (*recommend.State, error) {
	rec, err := recommend.New(cfg)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	b, err := st.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return rec.Restore(b)
}

// ConfigName is the container name whose policy configures the state of
// key (Key): the pod-level state takes the policy's default.
func ConfigName(key string) string {
	name, _ := SplitKey(key)
	if name == podcontainers.PodLevelName {
		return v1alpha1.DefaultContainerName
	}
	return name
}

// ErrUnusable is returned by Restore for a container whose policy
// configuration is invalid: the policy itself is, which Configure reports.
var ErrUnusable = errors.New("no usable recommender configuration")

// Restore puts back a container's state as a checkpoint encoded it
// (recommend.State.MarshalBinary), learnt up to updated.
func (m *Model) Restore(spec *v1alpha1.TailorPolicySpec, name string, encoded []byte, updated time.Time) error {
	cfg, err := Config(m.Base, spec, ConfigName(name))
	if err != nil {
		return ErrUnusable
	}
	rec, err := recommend.New(cfg)
	if err != nil {
		return ErrUnusable
	}
	st, err := rec.Restore(encoded)
	if err != nil {
		return err
	}
	m.Configs[name] = cfg
	m.Containers[name] = &Container{State: st, Fed: updated, Changed: updated}
	return nil
}

// container is the state of one container name, made on first use from its
// configuration (Configure checked every name the pods have).
func (m *Model) container(name string) *Container {
	wc, ok := m.Containers[name]
	if ok {
		return wc
	}
	wc = m.newContainer(name)
	m.Containers[name] = wc
	return wc
}

// newContainer is an empty state for container name, under its
// configuration (Configure checked every name the pods have).
func (m *Model) newContainer(name string) *Container {
	rec, err := recommend.New(m.configOf(name))
	if err != nil {
		// Configure validated every container's configuration.
		panic("recommender configuration for " + name + " became invalid: " + err.Error())
	}
	return &Container{State: rec.NewState()}
}

// configOf is the recommender configuration of the state of key (Key): a
// class's state, made between two Configures, takes its container name's.
func (m *Model) configOf(key string) recommend.Config {
	if cfg, ok := m.Configs[key]; ok {
		return cfg
	}
	if name, _ := SplitKey(key); name != key {
		if cfg, ok := m.Configs[name]; ok {
			return cfg
		}
	}
	return m.Base
}

// ForgetStale drops the container names no pod has fed for longer than both
// their windows: they hold no peak any more, so forgetting one loses
// nothing, and a container removed from the workload does not stay in
// memory and checkpoint. It returns the names dropped.
func (m *Model) ForgetStale(now time.Time) []string {
	var gone []string
	for name, wc := range m.Containers {
		cfg := m.configOf(name)
		last := wc.Fed
		if wc.Changed.After(last) {
			last = wc.Changed
		}
		if !last.IsZero() && now.Sub(last) > max(cfg.CPUWindow, cfg.MemoryWindow) {
			delete(m.Containers, name)
			delete(m.Configs, name)
			gone = append(gone, name)
		}
	}
	return gone
}
