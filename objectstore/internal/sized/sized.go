// Package sized holds what every backend checks about a put's body: that it is exactly as
// long as the size the caller gave.
package sized

import (
	"errors"
	"fmt"
	"io"
)

// Causes of a put that fails on its size; they are OpError causes, never sentinels.
var (
	ErrNegative = errors.New("negative size")
	ErrLonger   = errors.New("body is longer than the given size")
)

// Reader yields exactly size bytes of r and fails, before yielding the last byte, if r is
// shorter or longer. Failing before the end matters for streaming uploads: a request whose
// body errors is aborted instead of completed.
type Reader struct {
	r    io.Reader
	left int64
	err  error
}

// NewReader returns a Reader of size bytes of r.
func NewReader(r io.Reader, size int64) *Reader { return &Reader{r: r, left: size} }

// Err returns the first error other than io.EOF that Read returned, or nil.
func (s *Reader) Err() error { return s.err }

// Read implements io.Reader.
func (s *Reader) Read(p []byte) (int, error) {
	n, err := s.read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

func (s *Reader) read(p []byte) (int, error) {
	if s.left <= 0 {
		return 0, s.checkEnd()
	}
	if int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := s.r.Read(p)
	s.left -= int64(n)
	if s.left == 0 {
		if err := s.checkEnd(); err != io.EOF {
			return 0, err
		}
		return n, nil
	}
	if errors.Is(err, io.EOF) {
		return n, fmt.Errorf("%w: body ended %d bytes short of the given size", io.ErrUnexpectedEOF, s.left)
	}
	return n, err
}

func (s *Reader) checkEnd() error {
	var b [1]byte
	for {
		n, err := s.r.Read(b[:])
		if n > 0 {
			return ErrLonger
		}
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		if err != nil {
			return err
		}
	}
}
