package servertest

import (
	"io"
	"net/http"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
)

// AppendSession is an S2S append session opened on a test server, over h2c: Send writes
// input frames (any number before reading an ack, as a pipelining client does), Next reads
// the server's frames, Close ends the input.
type AppendSession struct {
	t  testing.TB
	pw *io.PipeWriter
	fr *s2api.FrameReader
}

// OpenAppendSession opens an append session on stream in the test basin; it ends with the
// test.
func (e *Env) OpenAppendSession(t testing.TB, stream string) *AppendSession {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(t.Context(), "POST", e.URL+"/v1/streams/"+stream+"/records", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("S2-Basin", TestBasin)
	req.Header.Set("Content-Type", "s2s/proto")
	res, err := e.H2C.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pw.Close()
		res.Body.Close()
	})
	return &AppendSession{t: t, pw: pw, fr: s2api.NewFrameReader(res.Body, 0)}
}

// Send writes one input frame; it reports whether the server still reads them.
func (s *AppendSession) Send(in batchfmt.AppendInput) bool {
	f, err := s2api.AppendFrame(nil, s2api.Frame{Body: s2api.AppendAppendInputProto(nil, &in)})
	if err != nil {
		s.t.Error(err)
		return false
	}
	_, err = s.pw.Write(f)
	return err == nil
}

// Close ends the session's input.
func (s *AppendSession) Close() { s.pw.Close() }

// Next returns the server's next frame (io.EOF once the session has ended).
func (s *AppendSession) Next() (s2api.Frame, error) { return s.fr.Next() }
