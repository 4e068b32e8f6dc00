package s2api

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// S2S frame layout constants.
const (
	// MaxFrameBytes is the largest length prefix (flag byte + body) either side accepts.
	MaxFrameBytes = 2 << 20
	// MaxFramePayload is the largest body of a frame, before or after decompression.
	MaxFramePayload = MaxFrameBytes - 1

	FlagTerminal         = 0x80
	FlagCompressionMask  = 0x60
	FlagZstd             = 0x20
	FlagGzip             = 0x40
	FlagReconnectAdvised = 0x10
)

// Compression of a frame's body.
type Compression uint8

const (
	CompressionNone Compression = iota
	CompressionZstd
	CompressionGzip
)

func (c Compression) String() string {
	switch c {
	case CompressionZstd:
		return "zstd"
	case CompressionGzip:
		return "gzip"
	}
	return "none"
}

// Frame is one S2S message. For a terminal frame Status is the HTTP status carried in its
// first two body bytes and Body is the rest (a JSON error, or empty for a clean end).
type Frame struct {
	Terminal         bool
	Compression      Compression // of a regular frame's body on the wire; Body is always plain
	ReconnectAdvised bool
	Status           int
	Body             []byte
}

// ErrFrame is matched (errors.Is) by every framing error: a truncated or oversized frame, a bad
// flag, a body that does not decompress. It is the corruption class of the S2S layer.
var ErrFrame = errors.New("s2api: bad s2s frame")

type frameError struct{ msg string }

func (e *frameError) Error() string        { return "s2api: bad s2s frame: " + e.msg }
func (e *frameError) Is(target error) bool { return target == ErrFrame }

func frameErr(format string, args ...any) error {
	return &frameError{msg: fmt.Sprintf(format, args...)}
}

// gzipWriters keeps gzip writers between frames: a new one allocates about 800 KB of
// compressor state, and a read session compresses every frame of 1 KiB or more.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// AppendFrame appends the wire form of f to dst, compressing a regular frame's body with
// f.Compression straight into dst. A terminal frame is never compressed. f.Body must not
// share memory with dst's spare capacity (dst[len(dst):cap(dst)]), which is written before
// the body is read. On error dst is returned with its length unchanged (its spare capacity
// may have been written).
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	var flag byte
	switch {
	case f.Terminal:
		flag = FlagTerminal
	case f.Compression == CompressionGzip:
		flag = FlagGzip
	case f.Compression == CompressionZstd:
		flag = FlagZstd
	case f.Compression != CompressionNone:
		return dst, fmt.Errorf("s2api: unknown compression %d", f.Compression)
	}
	if !f.Terminal && f.ReconnectAdvised {
		flag |= FlagReconnectAdvised
	}
	start := len(dst)
	out := append(dst, 0, 0, 0, flag) // the length is filled in below
	switch {
	case f.Terminal:
		out = binary.BigEndian.AppendUint16(out, uint16(f.Status))
		out = append(out, f.Body...)
	case f.Compression == CompressionGzip:
		w := appendWriter{out}
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(&w)
		_, err := zw.Write(f.Body)
		if err == nil {
			err = zw.Close()
		}
		zw.Reset(nil) // keep no reference to the frame's buffer in the pool
		gzipWriters.Put(zw)
		if err != nil {
			return dst, err
		}
		out = w.b
	case f.Compression == CompressionZstd:
		out = zstdEncoder().EncodeAll(f.Body, out)
	default:
		out = append(out, f.Body...)
	}
	n := len(out) - start - 3
	if n > MaxFrameBytes {
		return dst, frameErr("frame of %d bytes exceeds the limit of %d", n, MaxFrameBytes)
	}
	out[start], out[start+1], out[start+2] = byte(n>>16), byte(n>>8), byte(n)
	return out, nil
}

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// TerminalErrorFrame is the terminal frame that reports err (status + JSON body, as
// ErrorResponse maps it).
func TerminalErrorFrame(err error) Frame {
	status, body := ErrorResponse(err)
	return Frame{Terminal: true, Status: status, Body: body}
}

// Err decodes a terminal frame's error (nil for a terminal frame with status < 400).
func (f *Frame) Err() error {
	if !f.Terminal || f.Status < 400 {
		return nil
	}
	return DecodeErrorBody(f.Status, f.Body)
}

// FrameReader reads frames from a byte stream.
type FrameReader struct {
	r       io.Reader
	hdr     [4]byte
	maxSize int
}

// NewFrameReader reads frames from r, refusing any longer than maxFrame bytes (flag + body);
// maxFrame <= 0 or above MaxFrameBytes means MaxFrameBytes.
func NewFrameReader(r io.Reader, maxFrame int) *FrameReader {
	if maxFrame <= 0 || maxFrame > MaxFrameBytes {
		maxFrame = MaxFrameBytes
	}
	return &FrameReader{r: r, maxSize: maxFrame}
}

// Next reads one frame. It returns io.EOF at a clean end between frames, and an error matching
// ErrFrame for a truncated or malformed frame. Each frame's Body is freshly allocated and owned
// by the caller (decoded messages alias it, so it must not be reused).
func (fr *FrameReader) Next() (Frame, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:3]); err != nil {
		if err == io.EOF {
			return Frame{}, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			return Frame{}, frameErr("truncated length prefix")
		}
		return Frame{}, err
	}
	n := int(fr.hdr[0])<<16 | int(fr.hdr[1])<<8 | int(fr.hdr[2])
	if n < 1 {
		return Frame{}, frameErr("length 0: the flag byte is mandatory")
	}
	if n > fr.maxSize {
		return Frame{}, frameErr("frame of %d bytes exceeds the limit of %d", n, fr.maxSize)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(fr.r, buf); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return Frame{}, frameErr("truncated frame: want %d bytes", n)
		}
		return Frame{}, err
	}
	return ParseFrame(buf)
}

// ParseFrame decodes one frame's flag byte and body (the bytes after the length prefix).
func ParseFrame(b []byte) (Frame, error) {
	if len(b) < 1 {
		return Frame{}, frameErr("missing flag byte")
	}
	flag, body := b[0], b[1:]
	f := Frame{Terminal: flag&FlagTerminal != 0}
	if flag&0x0f != 0 {
		return Frame{}, frameErr("reserved flag bits set: %#02x", flag)
	}
	switch flag & FlagCompressionMask {
	case 0:
	case FlagZstd:
		f.Compression = CompressionZstd
	case FlagGzip:
		f.Compression = CompressionGzip
	default:
		return Frame{}, frameErr("unknown compression bits in flag %#02x", flag)
	}
	if f.Terminal {
		if f.Compression != CompressionNone {
			return Frame{}, frameErr("terminal frame must not be compressed")
		}
		if len(body) < 2 {
			return Frame{}, frameErr("terminal frame missing its status")
		}
		f.Status = int(binary.BigEndian.Uint16(body))
		f.Body = body[2:]
		return f, nil
	}
	f.ReconnectAdvised = flag&FlagReconnectAdvised != 0
	switch f.Compression {
	case CompressionNone:
		f.Body = body
	case CompressionGzip:
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return Frame{}, frameErr("gzip: %v", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, MaxFramePayload+1))
		if err != nil {
			return Frame{}, frameErr("gzip: %v", err)
		}
		if len(out) > MaxFramePayload {
			return Frame{}, frameErr("decompressed body exceeds %d bytes", MaxFramePayload)
		}
		f.Body = out
	case CompressionZstd:
		out, err := zstdDecoder().DecodeAll(body, nil)
		if err != nil {
			return Frame{}, frameErr("zstd: %v", err)
		}
		if len(out) > MaxFramePayload {
			return Frame{}, frameErr("decompressed body exceeds %d bytes", MaxFramePayload)
		}
		f.Body = out
	}
	return f, nil
}

var (
	zstdOnce sync.Once
	zdec     *zstd.Decoder
	zenc     *zstd.Encoder
)

func initZstd() {
	var err error
	zdec, err = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxFramePayload+1), zstd.WithDecoderConcurrency(0))
	if err != nil {
		panic(err) // only bad options can fail
	}
	zenc, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err)
	}
}

func zstdDecoder() *zstd.Decoder { zstdOnce.Do(initZstd); return zdec }
func zstdEncoder() *zstd.Encoder { zstdOnce.Do(initZstd); return zenc }
