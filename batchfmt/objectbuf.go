package batchfmt

import (
	"hash/crc32"
	"io"
)

// ObjectBuffer receives an object as it is read (ReadFrom) and decodes it (Decode), as
// Decode of the bytes read would. It checksums the bytes as they arrive, while they are
// still in the CPU's caches: Decode of a large object read whole checks it at the speed of
// memory instead, a tenth or more of the cost of reading a stream back.
type ObjectBuffer struct {
	data   []byte
	crc    uint32 // CRC32C of data[:summed]
	summed int
}

// NewObjectBuffer returns an empty buffer for an object of about size bytes; it grows if
// the object is larger.
func NewObjectBuffer(size int) *ObjectBuffer {
	return &ObjectBuffer{data: make([]byte, 0, max(size, 0)+readSpare)}
}

// readChunk bounds each read, so that its bytes are still in cache when they are summed.
const readChunk = 256 << 10

// readSpare is the room kept free for the read that finds the end.
const readSpare = 512

// ReadFrom appends what r holds, until io.EOF, and returns the number of bytes read. Any
// other error of r is returned.
func (b *ObjectBuffer) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		if cap(b.data)-len(b.data) < readSpare {
			b.data = append(b.data, make([]byte, readChunk)...)[:len(b.data)]
		}
		end := min(cap(b.data), len(b.data)+readChunk)
		n, err := r.Read(b.data[len(b.data):end])
		b.data = b.data[:len(b.data)+n]
		total += int64(n)
		// Sum all but the last TrailerSize bytes: they are the trailer if the object ends
		// here.
		if to := len(b.data) - TrailerSize; to > b.summed {
			b.crc = crc32.Update(b.crc, crcTable, b.data[b.summed:to])
			b.summed = to
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// Bytes returns the bytes read so far. The Object that Decode returns aliases them.
func (b *ObjectBuffer) Bytes() []byte { return b.data }

// Decode is the package's Decode of Bytes(), without reading them again to check them.
func (b *ObjectBuffer) Decode() (*Object, error) {
	if b.summed != len(b.data)-TrailerSize {
		return Decode(b.data) // shorter than a trailer: Decode reports it
	}
	return decode(b.data, nil, &b.crc)
}
