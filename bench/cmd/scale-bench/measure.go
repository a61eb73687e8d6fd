package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// managerProc is the tailor manager (or one of VPA's components), run as
// its own process so its memory and CPU are its own.
type managerProc struct {
	cmd         *exec.Cmd
	metricsAddr string
	pprofAddr   string
	log         *os.File
	// cg is the memory cgroup it runs in, if any.
	cg *memCgroup
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String(), nil
}

// startManager starts the manager; with cg, inside it (a shell joins the
// cgroup and execs the manager, so that the manager reads its limit from
// its first instruction).
func startManager(bin, kubeconfig, source, logPath string, syncPeriod time.Duration, extra []string, cg *memCgroup) (*managerProc, error) {
	metricsAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	probeAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	pprofAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"manager", "--kubeconfig", kubeconfig, "--metrics-source", source,
		"--sync-period", syncPeriod.String(), "--leader-elect=false",
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", probeAddr, "--pprof-bind-address", pprofAddr}, extra...)
	name := bin
	if cg != nil {
		args = append([]string{"-c", `echo $$ > "$0" && exec "$@"`, cg.procs(), bin}, args...)
		name = "/bin/sh"
	}
	m, err := startProcess(name, args, logPath)
	if err != nil {
		return nil, err
	}
	m.metricsAddr, m.pprofAddr = metricsAddr, pprofAddr
	return m, nil
}

// startProcess starts bin with args, its output to logPath.
func startProcess(bin string, args []string, logPath string) (*managerProc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	return &managerProc{cmd: cmd, log: logf}, nil
}

func (m *managerProc) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-done
	}
	_ = m.log.Close()
}

// saveHeapProfile writes the manager's heap profile to path.
func (m *managerProc) saveHeapProfile(ctx context.Context, path string) error {
	return m.saveProfile(ctx, "heap", path)
}

// saveCPUProfile writes the manager's CPU profile over the next d to path.
func (m *managerProc) saveCPUProfile(ctx context.Context, path string, d time.Duration) error {
	return m.saveProfile(ctx, fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), path)
}

// saveProfile writes the manager's pprof profile of the name given to path.
func (m *managerProc) saveProfile(ctx context.Context, name, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.pprofAddr+"/debug/pprof/"+name, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	_, err = io.Copy(f, resp.Body)
	return err
}

// procStats are the manager's resident memory (now and its peak) and CPU
// seconds so far, from /proc.
type procStats struct {
	rss, hwm int64
	// rssFile is the part of rss that maps files (the binary's pages, in
	// the page cache and reclaimable), the rest being the process's own.
	rssFile int64
	cpu     float64
	// majorFaults counts page faults that read from disk: a process whose
	// own pages (its binary's, under a memory limit) are evicted and
	// faulted back in again and again.
	majorFaults int64
}

func (m *managerProc) stats() (procStats, error) {
	var s procStats
	pid := m.cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			s.rss = kb << 10
		case "VmHWM:":
			s.hwm = kb << 10
		case "RssFile:":
			s.rssFile = kb << 10
		}
	}
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the command (which may hold spaces) start at state.
	rest := string(b[bytes.LastIndexByte(b, ')')+2:])
	f := strings.Fields(rest)
	s.majorFaults, _ = strconv.ParseInt(f[9], 10, 64)
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	s.cpu = (utime + stime) / clockTicks
	return s, nil
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// metricSet is one scrape: families by name.
type metricSet map[string]*dto.MetricFamily

func parseMetrics(r io.Reader) (metricSet, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	return metricSet(fams), err
}

func (m *managerProc) scrape(ctx context.Context) (metricSet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.metricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	return parseMetrics(resp.Body)
}

func scrapeAPIServer(ctx context.Context, cs kubernetes.Interface) (metricSet, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's /metrics: %w", err)
	}
	return parseMetrics(bytes.NewReader(raw))
}

// sum adds the values of a family's series whose labels match all of want.
func (s metricSet) sum(name string, want map[string]string) float64 {
	fam := s[name]
	if fam == nil {
		return 0
	}
	var total float64
	for _, m := range fam.GetMetric() {
		if !matches(m, want) {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			total += m.GetHistogram().GetSampleSum()
		case m.GetUntyped() != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

func matches(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// requests is the apiserver's apiserver_request_total by "VERB resource" or
// "VERB resource/subresource".
func (s metricSet) requests() map[string]float64 {
	out := map[string]float64{}
	fam := s["apiserver_request_total"]
	if fam == nil {
		return out
	}
	for _, m := range fam.GetMetric() {
		var verb, res, sub string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "verb":
				verb = l.GetValue()
			case "resource":
				res = l.GetValue()
			case "subresource":
				sub = l.GetValue()
			}
		}
		if res == "" {
			continue
		}
		k := verb + " " + res
		if sub != "" {
			k += "/" + sub
		}
		out[k] += m.GetCounter().GetValue()
	}
	return out
}

// machine says what the figures were measured on.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return fmt.Sprintf("%s, %d cores, %s memory, Linux %s, %s, %s/%s, load average at start %s",
		model, runtime.NumCPU(), mem, kernel, runtime.Version(), runtime.GOOS, runtime.GOARCH, load)
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(p * float64(len(s)-1))
	return s[i]
}
