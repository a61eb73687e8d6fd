package recommend

import "time"

// peakBuckets is the number of buckets a peak window is cut into; the
// window's memory is this many float32s, whatever its length.
const peakBuckets = 24

// peakWindow remembers the highest value seen in each of peakBuckets
// consecutive time buckets, so the peak over a sliding window costs a fixed
// 100 bytes instead of every sample. The window reaches back between
// (peakBuckets-1) and peakBuckets buckets.
type peakWindow struct {
	buckets [peakBuckets]float32
	// head is the bucket that holds headStart (Unix seconds).
	head      uint8
	headStart int64
}

// add records v at t. A sample older than the head bucket is counted in it,
// because by then its own bucket may be gone.
func (w *peakWindow) add(v float64, t time.Time, bucket time.Duration) {
	sec := t.Unix()
	size := int64(bucket / time.Second)
	if w.headStart == 0 {
		w.headStart = sec - sec%size
	}
	if ahead := (sec - w.headStart) / size; ahead > 0 {
		if ahead >= peakBuckets {
			w.buckets = [peakBuckets]float32{}
			w.headStart = sec - sec%size
		} else {
			for range ahead {
				w.head = (w.head + 1) % peakBuckets
				w.buckets[w.head] = 0
			}
			w.headStart += ahead * size
		}
	}
	if f := float32(v); f > w.buckets[w.head] {
		w.buckets[w.head] = f
	}
}

// peak is the highest value still in the window at now.
func (w *peakWindow) peak(now time.Time, bucket time.Duration) float64 {
	if w.headStart == 0 {
		return 0
	}
	size := int64(bucket / time.Second)
	expired := (now.Unix() - w.headStart) / size
	var m float32
	if expired <= 0 {
		// The usual case, right after a sample: every bucket is live.
		// A plain comparison: the max builtin's NaN handling costs more
		// than the rest of a decision, and peaks are never NaN.
		for _, b := range w.buckets {
			if b > m {
				m = b
			}
		}
		return float64(m)
	}
	for i := int64(0); i < peakBuckets-expired; i++ {
		if b := w.buckets[(int64(w.head)-i+peakBuckets)%peakBuckets]; b > m {
			m = b
		}
	}
	return float64(m)
}

// live is how many buckets, counted back from the head, are still in the
// window at now.
func (w *peakWindow) live(now time.Time, size int64) int64 {
	expired := max((now.Unix()-w.headStart)/size, 0)
	return max(peakBuckets-expired, 0)
}

// lastAtLeast returns when (Unix seconds) the newest bucket still in the
// window at now that holds v or more ends, and whether there is one. The
// end, not the start: the value may have been seen at any time within it.
func (w *peakWindow) lastAtLeast(v float64, now time.Time, bucket time.Duration) (int64, bool) {
	if w.headStart == 0 {
		return 0, false
	}
	size := int64(bucket / time.Second)
	for i := range w.live(now, size) {
		if float64(w.buckets[(int64(w.head)-i+peakBuckets)%peakBuckets]) >= v {
			return w.headStart + size - i*size, true
		}
	}
	return 0, false
}

// oldest returns when (Unix seconds) the oldest bucket still in the window
// at now begins: how far back the window knows. With nothing in the window
// it is now.
func (w *peakWindow) oldest(now time.Time, bucket time.Duration) int64 {
	size := int64(bucket / time.Second)
	if w.headStart == 0 || w.live(now, size) == 0 {
		return now.Unix()
	}
	return w.headStart - (w.live(now, size)-1)*size
}

func (w *peakWindow) empty() bool { return w.headStart == 0 }

// recent is the highest value in the newest n buckets still in the window
// at now (the head bucket counts as one, however little of it has passed):
// the peak over the last (n-1) to n buckets.
func (w *peakWindow) recent(now time.Time, bucket time.Duration, n int64) float64 {
	if w.headStart == 0 {
		return 0
	}
	size := int64(bucket / time.Second)
	expired := max((now.Unix()-w.headStart)/size, 0)
	var m float32
	for i := int64(0); i < min(n-expired, w.live(now, size)); i++ {
		if b := w.buckets[(int64(w.head)-i+peakBuckets)%peakBuckets]; b > m {
			m = b
		}
	}
	return float64(m)
}
