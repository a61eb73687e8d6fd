// Command loadgen creates real CPU and memory pressure inside a container, so
// e2e tests and the demo can drive tailor with the kubelet's own numbers. The
// load is set at start by flags and changed at run time over HTTP:
//
//	GET /cpu?millicores=1500     burn 1.5 cores (0 stops)
//	GET /memory?size=300Mi       hold 300 MiB of touched memory (0 frees it)
//	GET /status                  current settings as JSON
//	GET /healthz                 200 once started (see --start-work)
//	GET /work?cpu=10ms           a request that costs that much CPU time
//	GET /serve?rps=20            send itself that many /work requests a second
//	GET /metrics                 the served requests' latency histogram
//
// --serve-rps and --serve-work make it a service under a steady request
// rate: each request costs --serve-work of CPU time, measured on its own
// thread's clock, so its latency is that time when the container has CPU
// to spare and grows when the cgroup throttles it; the latency, seen from
// the sender, is the histogram loadgen_request_duration_seconds, which a
// Prometheus scraping the pod's prometheus.io annotations reads.
//
// --start-work makes it a slow starter, as a JVM warming up is: it burns that
// much CPU time (on two threads) before /healthz answers 200, so how fast it
// becomes Ready depends on the CPU its cgroup allows.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
)

// slice is the duty-cycle period of each burner: short enough that the CFS
// quota (100ms periods) sees a steady rate.
const slice = 10 * time.Millisecond

type load struct {
	mu          sync.Mutex
	millicores  int64
	cancelBurn  context.CancelFunc
	memory      [][]byte
	memoryBytes int64
}

func (l *load) setCPU(millicores int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancelBurn != nil {
		l.cancelBurn()
		l.cancelBurn = nil
	}
	l.millicores = millicores
	if millicores <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancelBurn = cancel
	for remaining := millicores; remaining > 0; remaining -= 1000 {
		go burn(ctx, min(remaining, 1000))
	}
}

// burn keeps one goroutine busy for millicores/1000 of every slice.
func burn(ctx context.Context, millicores int64) {
	busy := slice * time.Duration(millicores) / 1000
	x := 0
	for ctx.Err() == nil {
		start := time.Now()
		for time.Since(start) < busy {
			x++
		}
		if idle := slice - time.Since(start); idle > 0 {
			time.Sleep(idle)
		}
	}
}

func (l *load) setMemory(size int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	const chunk = 1 << 20
	want := int((size + chunk - 1) / chunk)
	if want < len(l.memory) {
		// Drop the references too: a truncated slice still holds its
		// tail, which the collector would then never free.
		clear(l.memory[want:])
		l.memory = l.memory[:want]
		debug.FreeOSMemory()
	}
	for len(l.memory) < want {
		b := make([]byte, chunk)
		// Touch every page so the memory counts in the working set.
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		l.memory = append(l.memory, b)
	}
	l.memoryBytes = size
}

func (l *load) status() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return map[string]int64{"cpuMillicores": l.millicores, "memoryBytes": l.memoryBytes}
}

func parseQuantity(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("invalid quantity %q: %w", s, err)
	}
	return q.Value(), nil
}

func main() {
	listen := flag.String("listen", ":8080", "HTTP address for load control")
	cpu := flag.String("cpu", "0", "initial CPU to burn, as a quantity (500m, 1.5)")
	mem := flag.String("memory", "0", "initial memory to hold, as a quantity (64Mi)")
	startWork := flag.Duration("start-work", 0, "CPU time to burn before reporting healthy, as a slow starter does (e.g. 3s)")
	serveRPS := flag.Float64("serve-rps", 0, "requests a second sent to its own /work, each costing --serve-work of CPU time (0: none)")
	serveWork := flag.Duration("serve-work", 10*time.Millisecond, "CPU time each served request costs")
	flag.Parse()

	l := &load{}
	cpuQ, err := resource.ParseQuantity(*cpu)
	if err != nil {
		log.Fatalf("invalid --cpu %q: %v", *cpu, err)
	}
	memBytes, err := parseQuantity(*mem)
	if err != nil {
		log.Fatalf("invalid --memory: %v", err)
	}
	l.setMemory(memBytes)
	l.setCPU(cpuQ.MilliValue())

	mux := http.NewServeMux()
	mux.HandleFunc("/cpu", func(w http.ResponseWriter, r *http.Request) {
		m, err := strconv.ParseInt(r.URL.Query().Get("millicores"), 10, 64)
		if err != nil || m < 0 {
			http.Error(w, "millicores must be a non-negative integer", http.StatusBadRequest)
			return
		}
		l.setCPU(m)
		writeStatus(w, l)
	})
	mux.HandleFunc("/memory", func(w http.ResponseWriter, r *http.Request) {
		size, err := parseQuantity(r.URL.Query().Get("size"))
		if err != nil || size < 0 {
			http.Error(w, "size must be a non-negative quantity such as 128Mi", http.StatusBadRequest)
			return
		}
		l.setMemory(size)
		writeStatus(w, l)
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) { writeStatus(w, l) })
	reg := prometheus.NewRegistry()
	srv := newServing(reg, *listen, *serveWork)
	mux.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) {
		work, err := time.ParseDuration(r.URL.Query().Get("cpu"))
		if err != nil || work < 0 || work > time.Second {
			http.Error(w, "cpu must be a duration from 0 to 1s, such as 10ms", http.StatusBadRequest)
			return
		}
		if err := burnThreadCPU(work); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/serve", func(w http.ResponseWriter, r *http.Request) {
		rps, err := strconv.ParseFloat(r.URL.Query().Get("rps"), 64)
		if err != nil || rps < 0 || rps > 1000 {
			http.Error(w, "rps must be a number from 0 to 1000", http.StatusBadRequest)
			return
		}
		srv.setRate(rps)
		_, _ = fmt.Fprintf(w, "{\"rps\":%g}\n", rps)
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv.setRate(*serveRPS)
	var started atomic.Bool
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !started.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	go func() {
		t0 := time.Now()
		if err := warmUp(*startWork); err != nil {
			log.Printf("start work: %v", err)
		}
		started.Store(true)
		log.Printf("started after %s (%s of CPU time)", time.Since(t0).Round(time.Millisecond), *startWork)
	}()

	hs := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.setRate(0)
		_ = hs.Shutdown(context.Background())
	}()
	log.Printf("loadgen listening on %s (GOMAXPROCS=%d) cpu=%dm memory=%d serve=%g/s of %s", *listen, runtime.GOMAXPROCS(0), cpuQ.MilliValue(), memBytes, *serveRPS, *serveWork)
	if err := hs.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Print(err)
		os.Exit(1)
	}
}

// warmUp burns work of CPU time on two threads, measured by the process's
// own CPU clock, so a throttled cgroup stretches it in wall time.
func warmUp(work time.Duration) error {
	if work <= 0 {
		return nil
	}
	cpuTime := func() (time.Duration, error) {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0, err
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
	}
	start, err := cpuTime()
	if err != nil {
		return err
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for !done.Load() {
				for range 100000 {
					x++
				}
			}
		}()
	}
	for {
		time.Sleep(20 * time.Millisecond)
		now, err := cpuTime()
		if err != nil || now-start >= work {
			done.Store(true)
			wg.Wait()
			return err
		}
	}
}

func writeStatus(w http.ResponseWriter, l *load) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(l.status())
}

// serving sends the container's own /work requests at a rate and times
// them from the sender's side, so a request that waits for CPU (a throttled
// cgroup) counts its wait.
type serving struct {
	url      string
	client   *http.Client
	duration prometheus.Histogram
	dropped  prometheus.Counter
	// inFlight bounds the requests waiting at once: past it a tick is
	// dropped (counted), as a client with a full connection pool would.
	inFlight chan struct{}

	mu   sync.Mutex
	stop context.CancelFunc
}

func newServing(reg prometheus.Registerer, listen string, work time.Duration) *serving {
	_, port, _ := strings.Cut(listen, ":")
	s := &serving{
		url:    fmt.Sprintf("http://127.0.0.1:%s/work?cpu=%s", port, work),
		client: &http.Client{Timeout: 30 * time.Second},
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "loadgen_request_duration_seconds",
			Help: "Latency of the requests loadgen sends to its own /work, seen from the sender.",
			// 5ms to about 10s: a request of 10ms of CPU time on an idle
			// core lands in the first buckets, a throttled one far above.
			Buckets: prometheus.ExponentialBuckets(0.005, 1.6, 17),
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "loadgen_requests_dropped_total",
			Help: "Requests not sent because too many were waiting.",
		}),
		inFlight: make(chan struct{}, 200),
	}
	reg.MustRegister(s.duration, s.dropped)
	return s
}

// setRate sends rps requests a second from now on (0 stops).
func (s *serving) setRate(rps float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
	if rps <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() {
		tick := time.NewTicker(time.Duration(float64(time.Second) / rps))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			select {
			case s.inFlight <- struct{}{}:
			default:
				s.dropped.Inc()
				continue
			}
			go func() {
				defer func() { <-s.inFlight }()
				start := time.Now()
				resp, err := s.client.Get(s.url)
				if err != nil {
					return
				}
				_ = resp.Body.Close()
				s.duration.Observe(time.Since(start).Seconds())
			}()
		}
	}()
}

// burnThreadCPU spins until the calling thread has run work of CPU time,
// by the thread's own clock: in wall time that is work on a free core and
// longer when the cgroup's quota is spent.
func burnThreadCPU(work time.Duration) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpuTime := func() (time.Duration, error) {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
			return 0, err
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
	}
	start, err := cpuTime()
	if err != nil {
		return err
	}
	x := 0
	for {
		for range 20000 {
			x++
		}
		now, err := cpuTime()
		if err != nil || now-start >= work {
			return err
		}
	}
}
