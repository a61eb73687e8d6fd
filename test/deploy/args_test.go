package deploy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tailorhq/tailor/internal/cli"
	"github.com/tailorhq/tailor/test/cluster"
)

// TestManagerArgsParse runs the manager container's args of each install
// through tailor's own flag parsing: an install that passes a flag the
// manager does not know, or a value it cannot parse, fails here instead
// of in a crash-looping pod; values set on the chart reach the flags.
func TestManagerArgsParse(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-args", "deploy-test-args"
	cases := map[string]struct {
		objs func(t *testing.T) []*unstructured.Unstructured
		want map[string]string
	}{
		"kustomize": {objs: func(t *testing.T) []*unstructured.Unstructured { return renderKustomize(t, namespace, release+"-") }},
		"helm default": {
			objs: func(t *testing.T) []*unstructured.Unstructured { return renderHelm(t, release, namespace) },
			want: map[string]string{"kube-api-qps": "100", "concurrent-syncs": "4", "leader-elect-lease-duration": "8s", "metrics-secure": "true",
				"kubelet-preferred-address-types": "[InternalIP,ExternalIP,Hostname]", "kubelet-max-page-bytes": "32Mi"},
		},
		"helm kubelet CA": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderHelm(t, release, namespace, "kubelet.tls.ca.configMapName=kubelet-serving-ca", "kubelet.preferredAddressTypes={Hostname,InternalIP}")
			},
			want: map[string]string{"kubelet-ca-file": "/etc/tailor/kubelet-ca/ca.crt", "kubelet-preferred-address-types": "[Hostname,InternalIP]"},
		},
		"helm kubelet insecure, page cap in bytes": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderHelm(t, release, namespace, "kubelet.tls.insecureSkipVerify=true", "kubelet.maxPageBytes=67108864")
			},
			want: map[string]string{"kubelet-insecure-tls": "true", "kubelet-max-page-bytes": "64Mi"},
		},
		"helm kubelet through the apiserver proxy": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderHelm(t, release, namespace, "kubelet.readVia=apiserver-proxy")
			},
			want: map[string]string{"kubelet-via-apiserver-proxy": "true"},
		},
		"helm metrics certificate": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderHelm(t, release, namespace, "metrics.certSecret=tailor-metrics-cert")
			},
			want: map[string]string{"metrics-secure": "true", "metrics-cert-dir": "/etc/tailor/metrics-certs"},
		},
		"helm plain metrics": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderHelm(t, release, namespace, "metrics.secure=false")
			},
			want: map[string]string{"metrics-secure": "false"},
		},
		"kustomize dashboard": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderKustomize(t, namespace, release+"-", "dashboard")
			},
			want: map[string]string{"dashboard-bind-address": "127.0.0.1:8082"},
		},
		"helm dashboard": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderHelm(t, release, namespace, "dashboard.enabled=true", "dashboard.historyPoints=720")
			},
			want: map[string]string{"dashboard-bind-address": "127.0.0.1:8082", "dashboard-history-points": "720"},
		},
		"helm dashboard prices": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderHelm(t, release, namespace, "dashboard.enabled=true", "dashboard.prices.cpuCoreHour=0.031", "dashboard.prices.memoryGiBHour=0")
			},
			want: map[string]string{"price-cpu-core-hour": "0.031", "price-memory-gib-hour": "0"},
		},
		"kustomize agent": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderKustomize(t, namespace, release+"-", "agent")
			},
			want: map[string]string{"metrics-source": "agent", "agent-fallback": "kubelet", "agent-bind-address": ":8444"},
		},
		"helm agent": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderHelm(t, release, namespace, "agent.enabled=true", "agent.fallback=metrics-server")
			},
			want: map[string]string{"metrics-source": "agent", "agent-fallback": "metrics-server", "agent-bind-address": ":8444"},
		},
		"helm watchNamespaces": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderHelm(t, release, namespace, "watchNamespaces={team-a,team-b}")
			},
			want: map[string]string{"namespaces": "[team-a,team-b]"},
		},
		"helm watchNamespaces sharded": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				// The first shard's Deployment: every shard's gets the same list.
				return renderHelm(t, release, namespace, "watchNamespaces={team-a,team-b,team-c}", "shards=2")
			},
			want: map[string]string{"namespaces": "[team-a,team-b,team-c]", "shards": "2", "shard-index": "0"},
		},
		"helm with values": {
			objs: func(t *testing.T) []*unstructured.Unstructured {
				return renderHelm(t, release, namespace, "kubeAPI.qps=150", "kubeAPI.burst=300", "concurrentSyncs=8",
					"checkpointInterval=2m", "leaderElection.leaseDuration=15s", "leaderElection.renewDeadline=10s",
					"leaderElection.retryPeriod=2s", "metricsSource=prometheus")
			},
			want: map[string]string{"kube-api-qps": "150", "kube-api-burst": "300", "concurrent-syncs": "8", "checkpoint-interval": "2m0s",
				"leader-elect-lease-duration": "15s", "leader-elect-renew-deadline": "10s", "leader-elect-retry-period": "2s",
				"metrics-source": "prometheus"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := managerArgs(t, tc.objs(t))
			if len(args) == 0 || args[0] != "manager" {
				t.Fatalf("manager container args %q do not start with the manager verb", args)
			}
			root := cli.NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
			cmd, rest, err := root.Find(args)
			if err != nil || cmd.Name() != "manager" {
				t.Fatalf("args %q find no manager command: %v", args, err)
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Fatalf("the manager refuses the install's args %q: %v", args, err)
			}
			if extra := cmd.Flags().Args(); len(extra) > 0 {
				t.Errorf("args the manager takes no flag for: %q", extra)
			}
			for flag, want := range tc.want {
				f := cmd.Flags().Lookup(flag)
				if f == nil || !f.Changed || f.Value.String() != want {
					t.Errorf("--%s = %v, want %s set by the install", flag, f.Value, want)
				}
			}
		})
	}
}

// managerArgs are the args of the manager Deployment's container.
func managerArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			m, _ := c.(map[string]any)
			if m["name"] != "manager" {
				continue
			}
			args, _, _ := unstructured.NestedStringSlice(m, "args")
			return args
		}
	}
	t.Fatal("no manager Deployment container rendered")
	return nil
}

// TestHelmShards: with shards set, the chart renders one Deployment per
// shard, each selecting only its own pods and passing the manager its
// shard, which the manager's own flag parsing accepts; one shard renders
// the Deployment as before shards existed.
func TestHelmShards(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-shards", "deploy-test-shards"
	deployments := func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, o := range objs {
			if o.GetKind() == "Deployment" {
				out = append(out, o)
			}
		}
		return out
	}
	one := deployments(renderHelm(t, release, namespace))
	if len(one) != 1 || one[0].GetName() != release+"-tailor-manager" {
		t.Fatalf("one shard: want the one Deployment %s-tailor-manager, got %d", release, len(one))
	}
	if args := managerArgs(t, one); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--shard") }) {
		t.Errorf("one shard passes shard flags: %q", args)
	}
	if args := managerArgs(t, one); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--namespaces") }) {
		t.Errorf("no watchNamespaces passes --namespaces: %q", args)
	}

	three := deployments(renderHelm(t, release, namespace, "shards=3"))
	if len(three) != 3 {
		t.Fatalf("shards=3 rendered %d Deployments", len(three))
	}
	root := cli.NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	for i, d := range three {
		if want := fmt.Sprintf("%s-tailor-manager-%d", release, i); d.GetName() != want {
			t.Errorf("Deployment %d is named %s, want %s", i, d.GetName(), want)
		}
		sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
		labels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
		if sel["tailor.dev/shard"] != strconv.Itoa(i) || labels["tailor.dev/shard"] != strconv.Itoa(i) {
			t.Errorf("Deployment %d selects %v with pod labels %v: want shard %d's pods only", i, sel, labels, i)
		}
		args := managerArgs(t, []*unstructured.Unstructured{d})
		cmd, rest, err := root.Find(args)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatalf("the manager refuses shard %d's args %q: %v", i, args, err)
		}
		for flag, want := range map[string]string{"shards": "3", "shard-index": strconv.Itoa(i)} {
			if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
				t.Errorf("shard %d: --%s = %s, want %s", i, flag, got, want)
			}
		}
	}
}

// TestHelmKubeletCA: the kubelets' CA given as a ConfigMap's or a Secret's
// key is mounted where --kubelet-ca-file names it; read through the
// apiserver proxy, nothing of it is rendered.
func TestHelmKubeletCA(t *testing.T) {
	cluster.Offline(t)
	const namespace, release = "deploy-kubelet-ca", "deploy-test-kubelet-ca"
	cases := map[string]struct {
		set        []string
		wantVolume map[string]any // nil: no kubelet-ca volume
	}{
		"ConfigMap": {
			set: []string{"kubelet.tls.ca.configMapName=kubelet-serving-ca"},
			wantVolume: map[string]any{"name": "kubelet-ca", "configMap": map[string]any{
				"name": "kubelet-serving-ca", "items": []any{map[string]any{"key": "ca.crt", "path": "ca.crt"}}}},
		},
		"Secret, another key": {
			set: []string{"kubelet.tls.ca.secretName=kubelet-serving-ca", "kubelet.tls.ca.key=bundle.pem"},
			wantVolume: map[string]any{"name": "kubelet-ca", "secret": map[string]any{
				"secretName": "kubelet-serving-ca", "items": []any{map[string]any{"key": "bundle.pem", "path": "bundle.pem"}}}},
		},
		"through the apiserver proxy": {set: []string{"kubelet.tls.ca.configMapName=kubelet-serving-ca", "kubelet.readVia=apiserver-proxy"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := renderHelm(t, release, namespace, tc.set...)
			var volume map[string]any
			var mounted bool
			for _, o := range objs {
				if o.GetKind() != "Deployment" {
					continue
				}
				volumes, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
				for _, v := range volumes {
					if m, _ := v.(map[string]any); m["name"] == "kubelet-ca" {
						volume = m
					}
				}
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				for _, c := range containers {
					mounts, _, _ := unstructured.NestedSlice(c.(map[string]any), "volumeMounts")
					for _, m := range mounts {
						if mm, _ := m.(map[string]any); mm["name"] == "kubelet-ca" && mm["mountPath"] == "/etc/tailor/kubelet-ca" {
							mounted = true
						}
					}
				}
			}
			if diff := cmp.Diff(tc.wantVolume, volume); diff != "" {
				t.Errorf("kubelet-ca volume (-want,+got):\n%s", diff)
			}
			if mounted != (tc.wantVolume != nil) {
				t.Errorf("kubelet-ca mounted at /etc/tailor/kubelet-ca: %v, want %v", mounted, tc.wantVolume != nil)
			}
			for _, a := range managerArgs(t, objs) {
				if strings.HasPrefix(a, "--kubelet-ca-file") && tc.wantVolume == nil {
					t.Errorf("--kubelet-ca-file passed without its volume: %q", a)
				}
			}
		})
	}
}

// The chart refuses kubelet settings the manager would refuse, saying
// what to change.
func TestHelmKubeletRefused(t *testing.T) {
	cluster.Offline(t)
	cases := map[string]struct {
		set     []string
		wantErr string
	}{
		"CA from two places":      {[]string{"kubelet.tls.ca.configMapName=a", "kubelet.tls.ca.secretName=b"}, "kubelet.tls.ca: set configMapName or secretName, not both"},
		"a CA and no check":       {[]string{"kubelet.tls.ca.configMapName=a", "kubelet.tls.insecureSkipVerify=true"}, "kubelet.tls: a CA and insecureSkipVerify exclude each other"},
		"another way to read":     {[]string{"kubelet.readVia=ssh"}, "/kubelet/readVia"},
		"an unknown address type": {[]string{"kubelet.preferredAddressTypes={InternalIp}"}, "/kubelet/preferredAddressTypes/0"},
		"a page cap too small":    {[]string{"kubelet.maxPageBytes=1024"}, "/kubelet/maxPageBytes"},
		"a page cap in MB":        {[]string{"kubelet.maxPageBytes=32MB"}, "/kubelet/maxPageBytes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, stderr, err := helmTemplate(t, nil, "kubelet", "deploy-kubelet", tc.set...)
			if err == nil || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("helm template --set %q: err %v, stderr %q: want it refused with %q", tc.set, err, stderr, tc.wantErr)
			}
		})
	}
}
