package propertytest

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Cases is how many generated cases a whole-decision property test
// runs: 10,000; 2,000 under the race detector, as make check runs them (the
// decision is pure, and its workers share nothing but the seeds and the
// first failure, so -race checks the harness); 1,000 with -short. The
// 2,000 are the first of the same 10,000 seeds; make explore runs 10,000
// of new ones.
func Cases() int {
	switch {
	case testing.Short():
		return 1000
	case Race:
		return 2000
	}
	return 10000
}

// Run runs Cases generated cases of run, on GOMAXPROCS
// workers, each from its own seed drawn from Seed on stream;
// it fails the test on the first failing case, naming its seed (which
// replays it), and returns the cases' summed stats, how many ran, the seed
// and how long they took.
func Run(t *testing.T, stream uint64, run func(seed uint64, stats map[string]int) string) (map[string]int, int, uint64, time.Duration) {
	t.Helper()
	return RunN(t, Cases(), stream, run)
}

// DefaultSeed draws the gate's cases: the same every run, so
// that a test which passed passes again on the same code, and a case that
// fails names its own seed, which the test's Seeds list then keeps.
const DefaultSeed = 20261128

// Seed is the seed the generated cases are drawn from:
// TAILOR_PROPERTY_SEED when set (a number replays a run; "clock" draws
// new cases, as make explore does to look further), else
// DefaultSeed.
func Seed(t *testing.T) uint64 {
	t.Helper()
	switch v := os.Getenv("TAILOR_PROPERTY_SEED"); v {
	case "":
		return DefaultSeed
	case "clock":
		seed := uint64(time.Now().UnixNano())
		t.Logf("TAILOR_PROPERTY_SEED=%d replays these cases", seed)
		return seed
	default:
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("TAILOR_PROPERTY_SEED=%q: want a number or \"clock\"", v)
		}
		return seed
	}
}

// RunN is Run for a given number of cases.
func RunN(t *testing.T, cases int, stream uint64, run func(seed uint64, stats map[string]int) string) (map[string]int, int, uint64, time.Duration) {
	t.Helper()
	seed := Seed(t)
	r := rand.New(rand.NewPCG(seed, stream))
	seeds := make([]uint64, cases)
	for i := range seeds {
		seeds[i] = r.Uint64()
	}
	start := time.Now()
	workers := runtime.GOMAXPROCS(0)
	failures := make([]string, cases)
	perWorker := make([]map[string]int, workers)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		perWorker[w] = map[string]int{}
		wg.Go(func() {
			for i := w; i < cases && !failed.Load(); i += workers {
				if msg := run(seeds[i], perWorker[w]); msg != "" {
					failures[i] = msg
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for i, msg := range failures {
		if msg != "" {
			t.Fatalf("case %d (seed %d): %s", i, seeds[i], msg)
		}
	}
	stats := map[string]int{}
	for _, m := range perWorker {
		for k, v := range m {
			stats[k] += v
		}
	}
	return stats, cases, seed, time.Since(start)
}

// Floor is the least a stat must reach per 10,000 cases: a decision that
// holds back what it should send (every resize, entry and recreation held
// would still keep every promise), or a generator that no longer draws
// what it should, fails the fuzz.
type Floor struct {
	Stat   string
	Per10k int
	Why    string
}

// CheckFloors fails the test for each stat below its floor, scaled to the
// cases run. The floors are half of what 10,000 cases gave. Drawn from the
// clock, the rarest of them at 2,000 cases (a handful of counts) would
// spread below half now and then; drawn from Seed, the same code
// draws the same counts, so a run of 2,000 is held to them too, and a
// change that moves one below its floor fails every time, not by chance.
func CheckFloors(t *testing.T, s map[string]int, cases int, floors []Floor) {
	t.Helper()
	if cases < 2000 {
		t.Logf("floors not checked at %d cases: the rarest are a few counts there", cases)
		return
	}
	for _, f := range floors {
		min := cases * f.Per10k / 10000
		if got := s[f.Stat]; got < min {
			t.Errorf("%s: %d in %d cases, want at least %d: %s", f.Stat, got, cases, min, f.Why)
		}
	}
}
