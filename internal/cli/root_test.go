package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tailorhq/tailor/internal/cli/exit"
)

// Installed as kubectl-tailor the binary is run by kubectl as `kubectl
// tailor`: its help says so, and its completion must leave kubectl's alone.
func TestAsKubectlPlugin(t *testing.T) {
	cases := map[string]struct {
		argv0   string
		args    []string
		want    []string
		wantNot []string
	}{
		"root help": {
			argv0: "/usr/local/bin/kubectl-tailor", args: []string{"--help"},
			want: []string{"kubectl tailor [command]"}, wantNot: []string{"kubectl [command]"},
		},
		"verb help and examples": {
			argv0: "kubectl-tailor", args: []string{"resize", "--help"},
			want:    []string{"kubectl tailor resize POD [-c CONTAINER]", "  kubectl tailor resize web-0 --limits cpu=3"},
			wantNot: []string{"kubectl resize", "\n  tailor resize"},
		},
		"as tailor, tailor": {
			argv0: "tailor", args: []string{"resize", "--help"},
			want: []string{"  tailor resize POD", "  tailor resize web-0"}, wantNot: []string{"kubectl tailor"},
		},
		"bash completion completes tailor, not kubectl": {
			argv0: "kubectl-tailor", args: []string{"completion", "bash"},
			want: []string{"__start_tailor()", "-F __start_tailor tailor"}, wantNot: []string{"__start_kubectl", "__kubectl_"},
		},
		"zsh completion completes tailor, not kubectl": {
			argv0: "kubectl-tailor", args: []string{"completion", "zsh"},
			want: []string{"#compdef tailor"}, wantNot: []string{"compdef kubectl", "_kubectl"},
		},
		"completion help names kubectl's plugin completion": {
			argv0: "kubectl-tailor", args: []string{"completion", "--help"},
			want: []string{"kubectl_complete-tailor"},
		},
		"kubectl_complete-tailor answers kubectl's plugin completion": {
			// kubectl runs it with the words after "kubectl tailor", the
			// last one being the word to complete.
			argv0: "/usr/local/bin/kubectl_complete-tailor", args: []string{"re"},
			want: []string{"replay\t", "report\t", "resize\t", "\n:4\n"}, wantNot: []string{"status"},
		},
		"kubectl_complete-tailor completes flags": {
			argv0: "kubectl_complete-tailor", args: []string{"resize", "--dry"},
			want: []string{"--dry-run\t"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := Execute(tc.argv0, tc.args, strings.NewReader(""), &out, &errOut); code != exit.OK {
				t.Fatalf("exit %d; stderr: %s", code, errOut.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(out.String(), w) {
					t.Errorf("stdout has %q:\n%s", w, out.String())
				}
			}
		})
	}
}
