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
// layout takes a new version; Restore reads every version written so far
// (checkpoints outlive the manager that wrote them) and refuses versions it
// does not know rather than guess.
const encodingVersion = 2

// encodedSizeV1 is the length of a version 1 state: the version, three
// bucket sizes (uint32 seconds), four windows (int64 head start and
// peakBuckets float32s, newest first), six int64 times and five float32s.
const encodedSizeV1 = 1 + 3*4 + 4*(8+4*peakBuckets) + 6*8 + 5*4

// encodedSize is the length of a version 2 state: version 1's fields, then
// the daily memory profile (int64 day, float32 days seen, profileHours
// float32s from midnight UTC).
const encodedSize = encodedSizeV1 + 8 + 4 + 4*profileHours

// maxEncodedTime bounds every time in an encoded state (Unix seconds, year
// 2242), so that converting to nanoseconds and subtracting whole windows
// cannot overflow.
const maxEncodedTime = 1 << 33

var _ encoding.BinaryMarshaler = (*State)(nil)

// MarshalBinary encodes s for a checkpoint, in a fixed little-endian
// layout of encodedSize bytes (version 2) that Restore reads back. It records the
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
	b = binary.LittleEndian.AppendUint64(b, uint64(s.memDaily.day))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(s.memDaily.days))
	for _, f := range s.memDaily.peaks {
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
// A version 1 state (written before the daily memory profile) restores
// with an empty profile: until it has seen Config.ProfileDays again the
// memory window's peak is held, as version 1 did. The profile is dropped
// when r does not use one, so a stale one is never used later. Input that
// is not a whole, valid encoding is an error.
func (r *Recommender) Restore(b []byte) (*State, error) {
	if len(b) == 0 {
		return nil, errors.New("restoring recommender state: empty input")
	}
	var want int
	switch b[0] {
	case 1:
		want = encodedSizeV1
	case encodingVersion:
		want = encodedSize
	default:
		return nil, fmt.Errorf("restoring recommender state: unsupported encoding version %d, want 1 or %d", b[0], encodingVersion)
	}
	if len(b) != want {
		return nil, fmt.Errorf("restoring recommender state: %d bytes, want %d for version %d", len(b), want, b[0])
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
	var daily dailyProfile
	if b[0] >= 2 {
		daily.day = int64(d.uint64())
		daily.days = d.float32()
		for i := range daily.peaks {
			daily.peaks[i] = d.float32()
		}
		if err := validateProfile(daily); err != nil {
			return nil, fmt.Errorf("restoring recommender state: %w", err)
		}
	}

	s := r.NewState()
	s.lastSample, s.lastMemAt, s.lastThrottle, s.lastOOM, s.runStart, s.lastRestart = times[0], times[1], times[2], times[3], times[4], times[5]
	s.throttled, s.lastCPU, s.lastMemory, s.cpuJitter, s.memJitter = floats[0], floats[1], floats[2], floats[3], floats[4]
	if r.cfg.MemoryProfile {
		s.memDaily = daily
	}
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

// validateProfile reports a daily profile no State could have held.
func validateProfile(p dailyProfile) error {
	if p.day < 0 || p.day > maxEncodedTime/daySeconds {
		return fmt.Errorf("daily profile's day %d is outside 0..%d", p.day, int64(maxEncodedTime/daySeconds))
	}
	if !(p.days >= 0) || p.days > maxProfileDays || p.days != float32(math.Trunc(float64(p.days))) {
		return fmt.Errorf("daily profile has seen %v days, want a whole number within 0..%d", p.days, maxProfileDays)
	}
	for h, v := range p.peaks {
		if !(v >= 0) || math.IsInf(float64(v), 1) {
			return fmt.Errorf("daily profile hour %d holds %v, want a finite value of at least 0", h, v)
		}
		if p.day == 0 && v != 0 {
			return fmt.Errorf("empty daily profile holds %v at hour %d", v, h)
		}
	}
	if p.day == 0 && p.days != 0 {
		return fmt.Errorf("empty daily profile has seen %v days", p.days)
	}
	return nil
}

// decoder reads little-endian fields from a buffer whose length was
// checked against its version's size.
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
