package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// The layout HotSpot writes (perfMemory.hpp, and the jvmstat readers of
// version 2.0): a prologue, then entries, each a header, its name and its
// data. All integers are in the byte order the prologue names.
const (
	// magic is the file's first four bytes, in that order on every
	// platform (HotSpot writes the word in its own byte order so that it
	// reads the same).
	magic = 0xcafec0c0

	prologueSize = 32
	entrySize    = 20

	// bigEndian and littleEndian are the prologue's byte order codes.
	bigEndian    = 0
	littleEndian = 1

	// The entry types tailor reads: 'J' a 64-bit integer, 'B' a byte
	// vector (a string when its units say so).
	typeLong = 'J'
	typeByte = 'B'

	// unitsString marks a byte vector as a NUL-terminated string.
	unitsString = 5

	// MaxSize bounds the file read: HotSpot's PerfDataMemorySize is 64KiB
	// by default (32KiB on JDK 17's Linux builds seen here), and one far
	// larger is not a JVM's.
	MaxSize = 1 << 20

	// maxEntries bounds the entries walked: a JVM has a few hundred.
	maxEntries = 1 << 14
)

// ErrNotAccessible is Parse's error for a file HotSpot has not finished
// setting up (its prologue's accessible flag unset): a JVM still starting.
var ErrNotAccessible = errors.New("perfdata: the JVM has not made its counters accessible yet")

// Counters are a JVM's counters by name: 64-bit integers and strings.
// Other types (HotSpot writes none of version 2.0's others) are skipped.
type Counters struct {
	Longs   map[string]int64
	Strings map[string]string
}

// Parse reads an hsperfdata file's contents. It returns an error for a
// buffer that is not a version 2 perfdata file or whose entries run out of
// it; a JVM writes its counters while they are read, so a value may be a
// moment older than its neighbour, but offsets and lengths never move
// once the JVM made the file accessible.
func Parse(b []byte) (Counters, error) {
	if len(b) < prologueSize {
		return Counters{}, fmt.Errorf("perfdata: %d bytes, shorter than the %d-byte prologue", len(b), prologueSize)
	}
	if m := binary.BigEndian.Uint32(b[0:4]); m != magic {
		return Counters{}, fmt.Errorf("perfdata: magic %#x, want %#x: not an hsperfdata file", m, magic)
	}
	var order binary.ByteOrder
	switch b[4] {
	case bigEndian:
		order = binary.BigEndian
	case littleEndian:
		order = binary.LittleEndian
	default:
		return Counters{}, fmt.Errorf("perfdata: byte order %d is neither big (0) nor little (1) endian", b[4])
	}
	if major, minor := b[5], b[6]; major != 2 {
		return Counters{}, fmt.Errorf("perfdata: version %d.%d, want 2.x", major, minor)
	}
	if b[7] != 1 {
		return Counters{}, ErrNotAccessible
	}
	offset := int64(int32(order.Uint32(b[24:28])))
	n := int64(int32(order.Uint32(b[28:32])))
	if n < 0 || n > maxEntries {
		return Counters{}, fmt.Errorf("perfdata: %d entries, want 0 to %d", n, maxEntries)
	}
	c := Counters{Longs: map[string]int64{}, Strings: map[string]string{}}
	for i := int64(0); i < n; i++ {
		if offset < prologueSize || offset > int64(len(b))-entrySize {
			return Counters{}, fmt.Errorf("perfdata: entry %d at %d, outside the %d-byte file", i, offset, len(b))
		}
		e := b[offset:]
		length := int64(int32(order.Uint32(e[0:4])))
		nameAt := int64(int32(order.Uint32(e[4:8])))
		vector := int64(int32(order.Uint32(e[8:12])))
		typ, units := e[12], e[14]
		dataAt := int64(int32(order.Uint32(e[16:20])))
		if length < entrySize || length > int64(len(e)) {
			return Counters{}, fmt.Errorf("perfdata: entry %d at %d is %d bytes long, want %d to %d", i, offset, length, entrySize, len(e))
		}
		e = e[:length]
		if nameAt < entrySize || nameAt >= length || dataAt < entrySize || dataAt > length {
			return Counters{}, fmt.Errorf("perfdata: entry %d at %d: name at %d, data at %d, outside its %d bytes", i, offset, nameAt, dataAt, length)
		}
		// HotSpot puts the name before the data: it ends there.
		names := e[nameAt:]
		if dataAt > nameAt {
			names = e[nameAt:dataAt]
		}
		end := bytes.IndexByte(names, 0)
		if end <= 0 {
			return Counters{}, fmt.Errorf("perfdata: entry %d at %d: its name is empty or not NUL-terminated", i, offset)
		}
		name := string(e[nameAt : nameAt+int64(end)])
		data := e[dataAt:]
		switch {
		case vector == 0 && typ == typeLong:
			if len(data) < 8 {
				return Counters{}, fmt.Errorf("perfdata: %s: an integer with %d bytes of data", name, len(data))
			}
			c.Longs[name] = int64(order.Uint64(data[:8]))
		case vector > 0 && typ == typeByte && units == unitsString:
			if vector > int64(len(data)) {
				return Counters{}, fmt.Errorf("perfdata: %s: a string of %d bytes with %d bytes of data", name, vector, len(data))
			}
			s := data[:vector]
			if z := bytes.IndexByte(s, 0); z >= 0 {
				s = s[:z]
			}
			c.Strings[name] = string(s)
		case vector < 0:
			return Counters{}, fmt.Errorf("perfdata: %s: vector length %d", name, vector)
		}
		offset += length
	}
	return c, nil
}
