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

func (w *peakWindow) empty() bool { return w.headStart == 0 }
