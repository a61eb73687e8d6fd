package replay_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailorhq/tailor/internal/cli"
	"github.com/tailorhq/tailor/internal/cli/exit"
)

// writeCSV writes eight days of 5-minute samples, constant usage.
func writeCSV(t *testing.T, dir, name string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("timestamp,cpu,memory\n")
	for i := range 8 * 288 {
		fmt.Fprintf(&b, "%d,0.5,%d\n", 1767225600+300*i, 200<<20)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReplayVerb(t *testing.T) {
	dir := t.TempDir()
	good := writeCSV(t, dir, "app.csv")
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("timestamp,cpu,memory\n1,0.5,1\n2,lots,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(garbage, []byte("dGhpcyBpcyBub3QgYSB0cmFjZQ==\nQW5kIG5laXRoZXIgaXMgdGhpcw==\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.csv")
	if err := os.WriteFile(short, []byte("timestamp,cpu,memory\n1767225600,0.5,1000\n1767229200,0.5,1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	headerOnly := filepath.Join(dir, "empty.csv")
	if err := os.WriteFile(headerOnly, []byte("timestamp,cpu,memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args       []string
		wantCode   int
		wantOut    []string
		wantErrOut string
	}{
		"a text file of garbage names the file and line": {
			args: []string{"replay", garbage}, wantCode: exit.Error,
			wantErrOut: garbage + `:1: not a CSV trace: want a header or rows of 3 columns (timestamp,cpu cores,memory bytes), got 1 in "dGhpcyBpcyBub3QgYSB0cmFjZQ=="`,
		},
		"a short series beside a long one is named, with why": {
			args:       []string{"replay", good, short, headerOnly},
			wantOut:    []string{"tailor", "1.00x"},
			wantErrOut: "warning: skipped 2 of 3 series spanning less than --min-span 168h0m0s or no more than --warmup 24h0m0s (short: spans 1h0m0s, empty: no samples); lower them",
		},
		"only short series: an error that says how to replay them": {
			args: []string{"replay", short}, wantCode: exit.Error,
			wantErrOut: "all 1 series are too short to judge: each must span at least --min-span 168h0m0s and more than --warmup 24h0m0s (short: spans 1h0m0s); replay shorter traces with smaller --min-span and --warmup",
		},
		"short series replayed when asked": {
			args: []string{"replay", "--min-span", "0", "--warmup", "10m", short}, wantOut: []string{"tailor"},
		},
		"table": {
			args:    []string{"replay", good},
			wantOut: []string{"not OOM kills", "policy", "tailor", "double", "oracle", "1.00x"},
		},
		"json with per-series figures": {
			args:    []string{"replay", "-o", "json", "--series-table", "--format", "csv", good},
			wantOut: []string{`"policy": "tailor"`, `"provisionedOverUsed"`, `"perSeries"`, `"series": "app"`},
		},
		"chart": {
			args:       []string{"replay", "--chart-dir", filepath.Join(dir, "charts"), "--chart-series", "app", good},
			wantErrOut: "series-app.svg",
		},
		"unparseable row names file and line": {
			args: []string{"replay", bad}, wantCode: exit.Error, wantErrOut: bad + ":3: cpu cores",
		},
		"missing file": {
			args: []string{"replay", filepath.Join(dir, "nope.csv")}, wantCode: exit.Usage, wantErrOut: "nope.csv does not exist",
		},
		"unknown format": {
			args: []string{"replay", "--format", "parquet", good}, wantCode: exit.Usage, wantErrOut: `--format "parquet"`,
		},
		"unknown output": {
			args: []string{"replay", "-o", "yaml", good}, wantCode: exit.Usage, wantErrOut: `-o "yaml"`,
		},
		"no args": {
			args: []string{"replay"}, wantCode: exit.Usage, wantErrOut: "at least one trace",
		},
		"chart of a series not replayed": {
			args: []string{"replay", "--chart-dir", dir, "--chart-series", "other", good}, wantCode: exit.Usage, wantErrOut: `"other"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := cli.Execute("tailor", tc.args, strings.NewReader(""), &out, &errOut)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.wantCode, errOut.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			if !strings.Contains(errOut.String(), tc.wantErrOut) || (tc.wantErrOut == "" && errOut.Len() > 0) {
				t.Errorf("stderr %q, want %q", errOut.String(), tc.wantErrOut)
			}
		})
	}
}
