package main

import (
	"bytes"
	"strings"
	"testing"
)

// Two runs of a package, as gotestsum writes them with --rerun-fails: A
// failed then passed (a flake), B failed twice (a failure, not a flake), C
// passed, and D's subtest failed then passed with it.
const twoRuns = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: got 1, want 2\n"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"pass","Package":"p","Test":"TestC"}
{"Action":"run","Package":"p","Test":"TestD"}
{"Action":"run","Package":"p","Test":"TestD/sub"}
{"Action":"output","Package":"p","Test":"TestD/sub","Output":"    d_test.go:5: sample refused\n"}
{"Action":"fail","Package":"p","Test":"TestD/sub"}
{"Action":"fail","Package":"p","Test":"TestD"}
not json: a build line
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestD"}
{"Action":"run","Package":"p","Test":"TestD/sub"}
{"Action":"pass","Package":"p","Test":"TestD/sub"}
{"Action":"pass","Package":"p","Test":"TestD"}
`

// The next phase's run of the same package, where those tests are skipped.
const otherPhase = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestD"}
{"Action":"skip","Package":"p","Test":"TestD"}
`

func TestReportNamesFlakesWithTheirFirstFailure(t *testing.T) {
	runs := map[key][]*attempt{}
	if err := read("shared.json", strings.NewReader(twoRuns), runs); err != nil {
		t.Fatal(err)
	}
	if err := read("quiet.json", strings.NewReader(otherPhase), runs); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	report(&out, runs)
	got := out.String()
	for _, want := range []string{"FLAKES: 2 test(s)", "--- FLAKE p TestA (shared.json)", "a_test.go:9: got 1, want 2", "--- FLAKE p TestD", "d_test.go:5: sample refused"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"TestB", "TestC", "TestD/sub;"} {
		if strings.Contains(got, not) {
			t.Errorf("report names %q, which did not flake:\n%s", not, got)
		}
	}
}
