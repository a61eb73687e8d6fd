// Command flakes reads the test2json files that gotestsum writes
// (--jsonfile) for the cluster suites, where a failed test is run once more,
// and prints the tests that failed and then passed: a flake is a bug to fix,
// not a pass, so the run says which tests flaked and why they first failed.
//
//	go run ./hack/flakes FILE...
//
// It exits 0 whatever it finds: whether the run failed is gotestsum's to
// say (a test that failed twice).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// attempt is one run of one test: what it printed and how it ended.
type attempt struct {
	output []string
	result string
}

// key names a test in one file: each file is one phase's run, and a test
// runs in one phase and is skipped in the others.
type key struct{ file, pkg, test string }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: flakes FILE...")
		os.Exit(2)
	}
	runs := map[key][]*attempt{}
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err != nil {
			// A phase that never ran has no file: nothing flaked there.
			fmt.Fprintf(os.Stderr, "flakes: %v\n", err)
			continue
		}
		if err := read(path, f, runs); err != nil {
			fmt.Fprintf(os.Stderr, "flakes: %s: %v\n", path, err)
		}
		_ = f.Close() // read only: nothing is lost if closing fails
	}
	report(os.Stdout, runs)
}

// read adds each test's attempts in r, the file named file, to runs. A
// subtest's output is also its top-level test's, whose failure it explains.
func read(file string, r io.Reader, runs map[key][]*attempt) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// go test prints build errors as plain lines among the JSON.
			continue
		}
		if e.Test == "" {
			continue
		}
		k := key{file, e.Package, e.Test}
		switch e.Action {
		case "run":
			runs[k] = append(runs[k], &attempt{})
		case "output":
			if a := last(runs[k]); a != nil {
				a.output = append(a.output, e.Output)
			}
			if root, _, sub := strings.Cut(e.Test, "/"); sub {
				if a := last(runs[key{file, e.Package, root}]); a != nil {
					a.output = append(a.output, e.Output)
				}
			}
		case "pass", "fail", "skip":
			if a := last(runs[k]); a != nil {
				a.result = e.Action
			}
		}
	}
	return sc.Err()
}

func last(as []*attempt) *attempt {
	if len(as) == 0 {
		return nil
	}
	return as[len(as)-1]
}

// report prints the top-level tests that failed and then passed, each with
// its first failure's output (a failed subtest's is inside it).
func report(w io.Writer, runs map[key][]*attempt) {
	var flaky []key
	for k, as := range runs {
		if strings.Contains(k.test, "/") || len(as) < 2 {
			continue
		}
		if as[0].result == "fail" && as[len(as)-1].result == "pass" {
			flaky = append(flaky, k)
		}
	}
	sort.Slice(flaky, func(i, j int) bool {
		if flaky[i].file != flaky[j].file {
			return flaky[i].file < flaky[j].file
		}
		if flaky[i].pkg != flaky[j].pkg {
			return flaky[i].pkg < flaky[j].pkg
		}
		return flaky[i].test < flaky[j].test
	})
	fmt.Fprintf(w, "FLAKES: %d test(s) failed, then passed when run again\n", len(flaky))
	for _, k := range flaky {
		fmt.Fprintf(w, "--- FLAKE %s %s (%s); its first failure:\n", k.pkg, k.test, filepath.Base(k.file))
		for _, line := range runs[k][0].output {
			fmt.Fprint(w, "    ", line)
			if !strings.HasSuffix(line, "\n") {
				fmt.Fprintln(w)
			}
		}
	}
}
