package replay

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Format names a trace file layout.
type Format string

const (
	// FormatAuto picks bitbrains or csv from the file's first line.
	FormatAuto Format = "auto"
	// FormatBitbrains is the GWA-T-12 Bitbrains layout: ";\t"-separated,
	// one row per 300 s, CPU in MHz and memory in KiB.
	FormatBitbrains Format = "bitbrains"
	// FormatCSV is "timestamp,cpu cores,memory bytes"; timestamps are Unix
	// seconds or RFC 3339, an empty memory field means "not measured".
	FormatCSV Format = "csv"
)

// Formats lists the accepted --format values.
var Formats = []Format{FormatAuto, FormatBitbrains, FormatCSV}

// Sample is one usage measurement.
type Sample struct {
	Time time.Time
	// CPU is the mean usage over the sample's interval, in cores.
	CPU float64
	// Memory is the working set in bytes; NaN when the source did not
	// measure it (Bitbrains reports 0 for ~7.6% of running rows).
	Memory float64
}

// HasMemory reports whether the sample carries a memory measurement.
func (s Sample) HasMemory() bool { return !math.IsNaN(s.Memory) }

// Series is one workload's usage in time order, without duplicate times.
type Series struct {
	Name    string
	Samples []Sample
	// CPUCapacity and MemoryCapacity are what the source says the workload
	// was given (cores, bytes) at its first sample; 0 when unknown.
	CPUCapacity    float64
	MemoryCapacity float64
	// MemoryLimit is the memory limit the workload's owner gave it, in
	// bytes: for Bitbrains the most memory the VM was provisioned with in
	// the trace (some VMs were resized during the month, and the owner's
	// limit is what they settled on); 0 when unknown (no limit). It is the
	// limit a RequestsOnly shape keeps.
	MemoryLimit float64
}

// Span is the time between the first and the last sample.
func (s *Series) Span() time.Duration {
	if len(s.Samples) < 2 {
		return 0
	}
	return s.Samples[len(s.Samples)-1].Time.Sub(s.Samples[0].Time)
}

// ParseError names the file and line a trace could not be read at.
type ParseError struct {
	File string
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// ReadPaths reads every trace file named, expanding directories to the
// files directly inside them (sorted by name, hidden files and checksums
// skipped). Series come back in the order read.
func ReadPaths(paths []string, format Format) ([]Series, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading trace: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("reading trace directory: %w", err)
		}
		var inDir []string
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || strings.HasPrefix(name, ".") || !isTraceName(name) {
				continue
			}
			inDir = append(inDir, filepath.Join(p, name))
		}
		if len(inDir) == 0 {
			return nil, fmt.Errorf("trace directory %s holds no .csv or .csv.gz files", p)
		}
		sortNatural(inDir)
		files = append(files, inDir...)
	}
	// Decompressing and parsing dominate a month's replay: spread the
	// files over the cores, keeping their order.
	out := make([]Series, len(files))
	errs := make([]error, len(files))
	forEach(len(files), 0, func(i int) {
		out[i], errs[i] = ReadFile(files[i], format)
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func isTraceName(name string) bool {
	return strings.HasSuffix(name, ".csv") || strings.HasSuffix(name, ".csv.gz")
}

// sortNatural orders "2.csv" before "10.csv" so listings read like the
// source's numbering.
func sortNatural(files []string) {
	key := func(p string) (int, string) {
		base := filepath.Base(p)
		stem := strings.TrimSuffix(strings.TrimSuffix(base, ".gz"), ".csv")
		n, err := strconv.Atoi(stem)
		if err != nil {
			return math.MaxInt, base
		}
		return n, base
	}
	slices.SortStableFunc(files, func(a, b string) int {
		na, sa := key(a)
		nb, sb := key(b)
		if na != nb {
			if na < nb {
				return -1
			}
			return 1
		}
		return strings.Compare(sa, sb)
	})
}

// ReadFile reads one trace file, gzipped or plain.
func ReadFile(path string, format Format) (Series, error) {
	f, err := os.Open(path)
	if err != nil {
		return Series{}, fmt.Errorf("reading trace: %w", err)
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return Series{}, fmt.Errorf("reading trace %s: %w", path, err)
		}
		defer func() { _ = zr.Close() }()
		r = zr
	}
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".gz"), ".csv")
	s, err := Read(r, path, format)
	s.Name = name
	return s, err
}

// maxLine bounds a trace's line: a row is a few dozen bytes, so a longer
// one is a file that is not a trace.
const maxLine = 1 << 20

// Read parses one trace from r; file is used in error messages only.
func Read(r io.Reader, file string, format Format) (Series, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	p := parser{file: file, format: format}
	for sc.Scan() {
		p.line++
		if err := p.parseLine(sc.Text()); err != nil {
			return Series{}, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line longer than %d bytes: not a text trace", maxLine)
		}
		return Series{}, &ParseError{File: file, Line: p.line + 1, Err: err}
	}
	if p.line == 0 {
		return Series{}, &ParseError{File: file, Line: 1, Err: errors.New("empty file")}
	}
	return p.series(), nil
}

type parser struct {
	file   string
	format Format
	line   int
	rows   []Sample
	s      Series
}

func (p *parser) errorf(format string, args ...any) error {
	return &ParseError{File: p.file, Line: p.line, Err: fmt.Errorf(format, args...)}
}

func (p *parser) parseLine(text string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if p.line == 1 {
		if p.format == FormatAuto || p.format == "" {
			p.format = FormatCSV
			if strings.Contains(text, ";") {
				p.format = FormatBitbrains
			}
		}
		switch p.format {
		case FormatBitbrains:
			if !strings.HasPrefix(text, "Timestamp") {
				return p.errorf("bitbrains header expected (\"Timestamp [ms];\tCPU cores;...\"), got %q", clip(text))
			}
			return nil
		case FormatCSV:
			if looksLikeHeader(text) {
				// A header has the rows' three columns; a first line
				// that has not is not a header but another file.
				if n := len(strings.Split(text, ",")); n != 3 {
					return p.errorf("not a CSV trace: want a header or rows of 3 columns (timestamp,cpu cores,memory bytes), got %d in %q", n, clip(text))
				}
				return nil
			}
		default:
			return p.errorf("unknown trace format %q (want one of %v)", p.format, Formats)
		}
	}
	if p.format == FormatBitbrains {
		return p.bitbrainsRow(text)
	}
	return p.csvRow(text)
}

func looksLikeHeader(text string) bool {
	first, _, _ := strings.Cut(text, ",")
	first = strings.TrimSpace(first)
	if first == "" {
		return true
	}
	_, errNum := strconv.ParseFloat(first, 64)
	_, errTime := time.Parse(time.RFC3339, first)
	return errNum != nil && errTime != nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// Bitbrains columns, after splitting on ";".
const (
	bbTime = iota
	bbCores
	bbCapacityMHz
	bbUsageMHz
	bbUsagePct
	bbMemCapacityKiB
	bbMemUsageKiB
	bbColumns = 11
)

func (p *parser) bitbrainsRow(text string) error {
	fields := strings.Split(text, ";")
	if len(fields) != bbColumns {
		return p.errorf("want %d \";\"-separated columns, got %d", bbColumns, len(fields))
	}
	var v [bbColumns]float64
	running := false
	for i, f := range fields {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return p.errorf("column %d: want a non-negative number, got %q", i+1, strings.TrimSpace(f))
		}
		v[i] = x
		if i != bbTime && x != 0 {
			running = true
		}
	}
	// Every value 0 means the VM was off; it used nothing because it did
	// not exist, which is not the same as an idle workload. Rows with no
	// CPU cores or capacity but some memory are a VM booting or shutting
	// down (they sit at the edges of off periods): without a capacity the
	// MHz cannot be converted to cores, so they are dropped as well.
	if !running || v[bbCores] == 0 || v[bbCapacityMHz] == 0 {
		return nil
	}
	// The header says milliseconds; the values are Unix seconds.
	t := time.Unix(int64(v[bbTime]), 0).UTC()
	cpu := v[bbUsageMHz] / (v[bbCapacityMHz] / v[bbCores])
	mem := v[bbMemUsageKiB] * 1024
	// A running VM never uses zero memory: 0 is a gap in the measurement.
	if mem == 0 {
		mem = math.NaN()
	}
	if len(p.rows) == 0 {
		p.s.CPUCapacity = v[bbCores]
		p.s.MemoryCapacity = v[bbMemCapacityKiB] * 1024
	}
	p.s.MemoryLimit = max(p.s.MemoryLimit, v[bbMemCapacityKiB]*1024)
	p.rows = append(p.rows, Sample{Time: t, CPU: cpu, Memory: mem})
	return nil
}

func (p *parser) csvRow(text string) error {
	fields := strings.Split(text, ",")
	if len(fields) != 3 {
		return p.errorf("want 3 columns (timestamp,cpu cores,memory bytes), got %d in %q", len(fields), clip(text))
	}
	ts := strings.TrimSpace(fields[0])
	var t time.Time
	if sec, err := strconv.ParseFloat(ts, 64); err == nil {
		t = time.Unix(int64(sec), 0).UTC()
	} else if t, err = time.Parse(time.RFC3339, ts); err != nil {
		return p.errorf("timestamp: want Unix seconds or RFC 3339, got %q", ts)
	}
	cpu, err := strconv.ParseFloat(strings.TrimSpace(fields[1]), 64)
	if err != nil || math.IsNaN(cpu) || math.IsInf(cpu, 0) || cpu < 0 {
		return p.errorf("cpu cores: want a non-negative number, got %q", strings.TrimSpace(fields[1]))
	}
	mem := math.NaN()
	if m := strings.TrimSpace(fields[2]); m != "" {
		mem, err = strconv.ParseFloat(m, 64)
		if err != nil || math.IsNaN(mem) || math.IsInf(mem, 0) || mem < 0 {
			return p.errorf("memory bytes: want a non-negative number or nothing, got %q", m)
		}
	}
	p.rows = append(p.rows, Sample{Time: t, CPU: cpu, Memory: mem})
	return nil
}

// series sorts rows by time and keeps the first row of each repeated
// timestamp, as the Bitbrains README prescribes.
func (p *parser) series() Series {
	rows := p.rows
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Time.Before(rows[j].Time) })
	out := rows[:0]
	for _, r := range rows {
		if len(out) > 0 && r.Time.Equal(out[len(out)-1].Time) {
			continue
		}
		out = append(out, r)
	}
	p.s.Samples = slices.Clip(out)
	return p.s
}
