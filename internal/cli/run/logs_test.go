package run

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
)

// jsonLines decodes every line of b, failing on one that is not JSON.
func jsonLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(b)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Errorf("a log line is not JSON: %q", sc.Text())
			continue
		}
		out = append(out, m)
	}
	return out
}

// The manager's and agent's logs are one JSON stream: client-go's klog
// lines (leader election, reflectors) go through the same logger as
// tailor's own, and --zap-log-level filters both.
func TestLogFlags(t *testing.T) {
	t.Cleanup(klog.ClearLogger)
	cases := map[string]struct {
		args []string
		// want are the messages that come out, in order.
		want []string
	}{
		"defaults: info and up, klog included": {
			want: []string{"tailor info", "klog structured", "klog printf 7", "klog error"},
		},
		"--zap-log-level=error": {
			args: []string{"--zap-log-level=error"},
			want: []string{"klog error"},
		},
		"--zap-log-level=debug": {
			args: []string{"--zap-log-level=debug"},
			want: []string{"tailor info", "tailor debug", "klog structured", "klog printf 7", "klog error"},
		},
	}
	for name, tc := range cases {
		for _, verb := range []string{"manager", "agent"} {
			t.Run(verb+" "+name, func(t *testing.T) {
				var logs *logFlags
				var fs *pflag.FlagSet
				switch verb {
				case "manager":
					o := &ManagerOptions{configFlags: genericclioptions.NewConfigFlags(false), streams: genericiooptions.NewTestIOStreamsDiscard()}
					fs, logs = o.command().Flags(), &o.logs
				case "agent":
					o := &AgentOptions{configFlags: genericclioptions.NewConfigFlags(false)}
					fs, logs = o.command().Flags(), &o.logs
				}
				if err := fs.Parse(tc.args); err != nil {
					t.Fatalf("parse %v: %v", tc.args, err)
				}
				var buf bytes.Buffer
				log := logs.setup(&buf)
				log.Info("tailor info")
				log.V(1).Info("tailor debug")
				klog.InfoS("klog structured", "lease", "kube-system/tailor")
				klog.Infof("klog printf %d", 7)
				klog.ErrorS(nil, "klog error")
				klog.Flush()
				var got []string
				for _, line := range jsonLines(t, &buf) {
					msg, _ := line["msg"].(string)
					got = append(got, msg)
					if msg == "klog structured" && line["lease"] != "kube-system/tailor" {
						t.Errorf("klog's key-value pairs lost: %v", line)
					}
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("messages logged (-want,+got):\n%s", diff)
				}
			})
		}
	}
}
