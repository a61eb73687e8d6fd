package recommend

import (
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// encodingVersion is the first byte of every encoded state. A change of
// layout takes a new version; Restore refuses versions it does not know
// rather than guess.
const encodingVersion = 1

// encodedSize is the length of a version 1 state: the version, three
// bucket sizes (uint32 seconds), four windows (int64 head start and
// peakBuckets float32s, newest first), six int64 times and five float32s.
const encodedSize = 1 + 3*4 + 4*(8+4*peakBuckets) + 6*8 + 5*4

// maxEncodedTime bounds every time in an encoded state (Unix seconds, year
// 2242), so that converting to nanoseconds and subtracting whole windows
// cannot overflow.
const maxEncodedTime = 1 << 33

var _ encoding.BinaryMarshaler = (*State)(nil)

// MarshalBinary encodes s for a checkpoint, in a fixed little-endian
// layout of encodedSize bytes that Restore reads back. It records the
// bucket sizes, so a recommender configured with other windows can still
// restore it.
func (s *State) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, encodedSize)
	b = append(b, encodingVersion)
	for _, d := range []time.Duration{s.r.cpuBucket, s.r.memBucket, s.r.stabBucket} {
		b = binary.LittleEndian.AppendUint32(b, uint32(d/time.Second))
	}
	for _, w := range []*peakWindow{&s.cpu, &s.mem, &s.cpuNeed, &s.memNeed} {
		b = binary.LittleEndian.AppendUint64(b, uint64(w.headStart))
		for i := range peakBuckets {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(w.buckets[(int(w.head)-i+peakBuckets)%peakBuckets]))
		}
	}
	for _, t := range []int64{s.lastSample, s.lastMemAt, s.lastThrottle, s.lastOOM, s.runStart, s.lastRestart} {
		b = binary.LittleEndian.AppendUint64(b, uint64(t))
	}
	for _, f := range []float32{s.throttled, s.lastCPU, s.lastMemory, s.cpuJitter, s.memJitter} {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b, nil
}

// encodedWindow is a peak window as encoded: its buckets newest first.
type encodedWindow struct {
	headStart int64
	buckets   [peakBuckets]float32
}

// Restore decodes a state written by MarshalBinary for use with r. A state
// written under other window lengths is re-bucketed onto r's: each old
// bucket's peak goes into the new bucket holding the old bucket's latest
// moment, so no peak leaves the window earlier than it would have, and
// lowering waits until r's whole stabilization window is known again.
// Input that is not a whole, valid encoding is an error.
func (r *Recommender) Restore(b []byte) (*State, error) {
	if len(b) == 0 {
		return nil, errors.New("restoring recommender state: empty input")
	}
	if b[0] != encodingVersion {
		return nil, fmt.Errorf("restoring recommender state: unsupported encoding version %d, want %d", b[0], encodingVersion)
	}
	if len(b) != encodedSize {
		return nil, fmt.Errorf("restoring recommender state: %d bytes, want %d for version %d", len(b), encodedSize, encodingVersion)
	}
	d := decoder{b: b[1:]}
	var buckets [3]int64
	for i := range buckets {
		buckets[i] = int64(d.uint32())
	}
	var windows [4]encodedWindow
	for i := range windows {
		windows[i].headStart = int64(d.uint64())
		for j := range peakBuckets {
			windows[i].buckets[j] = d.float32()
		}
	}
	var times [6]int64
	for i := range times {
		times[i] = int64(d.uint64())
	}
	var floats [5]float32
	for i := range floats {
		floats[i] = d.float32()
	}
	if err := validateEncoded(buckets, windows, times, floats); err != nil {
		return nil, fmt.Errorf("restoring recommender state: %w", err)
	}

	s := r.NewState()
	s.lastSample, s.lastMemAt, s.lastThrottle, s.lastOOM, s.runStart, s.lastRestart = times[0], times[1], times[2], times[3], times[4], times[5]
	s.throttled, s.lastCPU, s.lastMemory, s.cpuJitter, s.memJitter = floats[0], floats[1], floats[2], floats[3], floats[4]
	latest := max(s.lastSample, s.lastMemAt, s.lastThrottle, s.lastOOM)
	restoreWindow(&s.cpu, windows[0], buckets[0], r.cpuBucket, latest)
	restoreWindow(&s.mem, windows[1], buckets[1], r.memBucket, latest)
	if r.stabBucket == 0 {
		return s, nil
	}
	restoreWindow(&s.cpuNeed, windows[2], buckets[2], r.stabBucket, latest)
	restoreWindow(&s.memNeed, windows[3], buckets[2], r.stabBucket, latest)
	if buckets[2] != int64(r.stabBucket/time.Second) {
		// The needed values are known only as far back as the encoded
		// window reached (not at all without one): the run of samples
		// counts from there, so a shorter old window cannot pass for r's.
		known := latest
		if buckets[2] > 0 && windows[2].headStart != 0 {
			known = max(min(windows[2].headStart, windows[3].headStart)-(peakBuckets-1)*buckets[2], 0)
		}
		s.runStart = max(s.runStart, known*int64(time.Second))
	}
	return s, nil
}

// restoreWindow fills w, whose buckets are size long, from e, whose
// buckets were old seconds long. With the same size the buckets are copied;
// otherwise each old bucket's peak is added at its latest moment (no later
// than latest, the newest event the state had seen), oldest first.
func restoreWindow(w *peakWindow, e encodedWindow, old int64, size time.Duration, latest int64) {
	if e.headStart == 0 {
		return
	}
	if old == int64(size/time.Second) {
		w.headStart = e.headStart
		for i, v := range e.buckets {
			w.buckets[(peakBuckets-i)%peakBuckets] = v
		}
		return
	}
	for i := peakBuckets - 1; i >= 0; i-- {
		v := e.buckets[i]
		if v == 0 && i != 0 {
			// Nothing to keep; the newest bucket is added even when 0,
			// because a window that saw only zeros is not empty.
			continue
		}
		start := e.headStart - int64(i)*old
		// Not before 1970: a time of 0 means never to a window.
		at := max(start, min(start+old-1, latest), 1)
		w.add(float64(v), time.Unix(at, 0), size)
	}
}

// validateEncoded reports the first field of a decoded state that no
// State could have held.
func validateEncoded(buckets [3]int64, windows [4]encodedWindow, times [6]int64, floats [5]float32) error {
	if buckets[0] == 0 || buckets[1] == 0 {
		return fmt.Errorf("peak bucket sizes %ds and %ds must be positive", buckets[0], buckets[1])
	}
	for i, w := range windows {
		if w.headStart < 0 || w.headStart > maxEncodedTime {
			return fmt.Errorf("window %d starts at %d, outside 0..%d", i, w.headStart, int64(maxEncodedTime))
		}
		if i >= 2 && buckets[2] == 0 && w.headStart != 0 {
			return fmt.Errorf("window %d holds needed values without a stabilization bucket size", i)
		}
		for j, v := range w.buckets {
			if !(v >= 0) || math.IsInf(float64(v), 1) {
				return fmt.Errorf("window %d bucket %d holds %v, want a finite value of at least 0", i, j, v)
			}
			if w.headStart == 0 && v != 0 {
				return fmt.Errorf("empty window %d holds %v in bucket %d", i, v, j)
			}
		}
	}
	for i, t := range times {
		limit := int64(maxEncodedTime)
		if i >= 4 {
			// runStart and lastRestart are Unix nanoseconds.
			limit *= int64(time.Second)
		}
		if t < 0 || t > limit {
			return fmt.Errorf("time %d is %d, outside 0..%d", i, t, limit)
		}
	}
	for i, f := range floats {
		if !(f >= 0) || math.IsInf(float64(f), 1) {
			return fmt.Errorf("value %d is %v, want a finite value of at least 0", i, f)
		}
	}
	return nil
}

// decoder reads little-endian fields from a buffer whose length was
// checked against encodedSize.
type decoder struct{ b []byte }

func (d *decoder) uint32() uint32 {
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) uint64() uint64 {
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) float32() float32 { return math.Float32frombits(d.uint32()) }
