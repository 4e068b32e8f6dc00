package objectstore

import (
	"errors"
	"fmt"
	"io"
)

// sizedReader yields exactly size bytes of r and fails, before yielding the last byte, if r
// is shorter or longer. Failing before the end matters for streaming uploads: a request whose
// body errors is aborted instead of completed.
//
// The first error it returns (other than io.EOF) is kept in err.
type sizedReader struct {
	r    io.Reader
	left int64
	err  error
}

func newSizedReader(r io.Reader, size int64) *sizedReader { return &sizedReader{r: r, left: size} }

func (s *sizedReader) Read(p []byte) (int, error) {
	n, err := s.read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

func (s *sizedReader) read(p []byte) (int, error) {
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

func (s *sizedReader) checkEnd() error {
	var b [1]byte
	for {
		n, err := s.r.Read(b[:])
		if n > 0 {
			return errBodyLonger
		}
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		if err != nil {
			return err
		}
	}
}
