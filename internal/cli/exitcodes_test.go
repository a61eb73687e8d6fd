package cli

import (
	"bytes"
	"testing"

	"github.com/tailorhq/tailor/internal/cli/exit"
)

func TestExecuteExitCodes(t *testing.T) {
	cases := map[string]struct {
		args []string
		want int
	}{
		"version":        {args: []string{"version"}, want: exit.OK},
		"unknown verb":   {args: []string{"frobnicate"}, want: exit.Usage},
		"bad flag":       {args: []string{"resize", "p", "--nope"}, want: exit.Usage},
		"missing pod":    {args: []string{"resize", "--limits", "cpu=1"}, want: exit.Usage},
		"bad quantity":   {args: []string{"resize", "p", "--limits", "cpu=x"}, want: exit.Usage},
		"status bad -o":  {args: []string{"status", "-o", "xml", "--kubeconfig", "/nonexistent"}, want: exit.Usage},
		"resize no-op ":  {args: []string{"resize", "p"}, want: exit.Usage},
		"dry-run bogus":  {args: []string{"resize", "p", "--limits", "cpu=1", "--dry-run=maybe"}, want: exit.Usage},
		"timeout bogus ": {args: []string{"resize", "p", "--limits", "cpu=1", "--timeout=0s"}, want: exit.Usage},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if got := Execute("tailor", tc.args, nil, &out, &errOut); got != tc.want {
				t.Errorf("exit = %d, want %d; stderr: %s", got, tc.want, errOut.String())
			}
		})
	}
}
