// Command loadgen creates real CPU and memory pressure inside a container, so
// e2e tests and the demo can drive tailor with the kubelet's own numbers. The
// load is set at start by flags and changed at run time over HTTP:
//
//	GET /cpu?millicores=1500     burn 1.5 cores (0 stops)
//	GET /memory?size=300Mi       hold 300 MiB of touched memory (0 frees it)
//	GET /status                  current settings as JSON
//	GET /healthz                 200 once started (see --start-work)
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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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

	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	log.Printf("loadgen listening on %s (GOMAXPROCS=%d) cpu=%dm memory=%d", *listen, runtime.GOMAXPROCS(0), cpuQ.MilliValue(), memBytes)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
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
