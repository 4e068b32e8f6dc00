package server_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/memtest"
	"github.com/sluice-dev/sluice/server/servertest"
)

const (
	benchRecords    = 100
	benchRecordSize = 100
)

func benchInput() batchfmt.AppendInput {
	in := batchfmt.AppendInput{Records: make([]batchfmt.Record, benchRecords)}
	body := bytes.Repeat([]byte("x"), benchRecordSize)
	for i := range in.Records {
		in.Records[i] = batchfmt.Record{Body: body, Headers: []batchfmt.Header{{Name: []byte("k"), Value: []byte("v")}}}
	}
	return in
}

// BenchmarkAppend compares appends of 100 records × 100 bytes through the backend (library)
// with the same appends over HTTP/1.1 as JSON and as protobuf, in one run.
func BenchmarkAppend(b *testing.B) {
	in := benchInput()
	jsonBody := s2api.EncodeAppendInputJSON(&in, s2api.FormatRaw)
	protoBody := s2api.AppendAppendInputProto(nil, &in)
	payload := int64(in.MeteredSize())
	b.Run("library", func(b *testing.B) {
		env := servertest.Start(b, newMem)
		env.CreateStream(b, "s")
		b.SetBytes(payload)
		for b.Loop() {
			if _, err := env.Backend.Append(b.Context(), servertest.TestBasin, "s", in); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
	})
	for _, c := range []struct {
		name, ct string
		body     []byte
	}{{"http-json", "application/json", jsonBody}, {"http-proto", "application/protobuf", protoBody}} {
		b.Run(c.name, func(b *testing.B) {
			env := servertest.Start(b, newMem)
			env.CreateStream(b, "s")
			b.SetBytes(payload)
			for b.Loop() {
				req, _ := http.NewRequest("POST", env.URL+"/v1/streams/s/records", bytes.NewReader(c.body))
				req.Header.Set("S2-Basin", servertest.TestBasin)
				req.Header.Set("Content-Type", c.ct)
				res, err := env.H1.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Fatalf("status %d", res.StatusCode)
				}
			}
			b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkRead compares reading 1000 records × 100 bytes through a backend cursor (library)
// with unary reads over HTTP/1.1 as JSON and as protobuf, in one run.
func BenchmarkRead(b *testing.B) {
	setup := func(b *testing.B) *servertest.Env {
		env := servertest.Start(b, newMem)
		env.CreateStream(b, "s")
		in := benchInput()
		for i := 0; i < 10; i++ {
			if _, err := env.Backend.Append(b.Context(), servertest.TestBasin, "s", in); err != nil {
				b.Fatal(err)
			}
		}
		return env
	}
	in := benchInput()
	payload := int64(10 * in.MeteredSize())
	b.Run("library", func(b *testing.B) {
		env := setup(b)
		b.SetBytes(payload)
		for b.Loop() {
			cur, err := env.Backend.Read(b.Context(), servertest.TestBasin, "s", s2api.ReadStart{SeqNum: new(uint64)})
			if err != nil {
				b.Fatal(err)
			}
			rb, err := cur.Next(b.Context(), server.ReadLimit{Records: 1000, Bytes: 1 << 20}, false)
			if err != nil || len(rb.Records) != 1000 {
				b.Fatalf("%d records, %v", len(rb.Records), err)
			}
			_ = cur.Close()
		}
		b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "records/s")
	})
	for _, c := range []struct{ name, accept string }{{"http-json", "application/json"}, {"http-proto", "application/protobuf"}} {
		b.Run(c.name, func(b *testing.B) {
			env := setup(b)
			b.SetBytes(payload)
			for b.Loop() {
				req, _ := http.NewRequest("GET", env.URL+"/v1/streams/s/records?seq_num=0&count=1000", nil)
				req.Header.Set("S2-Basin", servertest.TestBasin)
				req.Header.Set("Accept", c.accept)
				res, err := env.H1.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || n < 100000 {
					b.Fatalf("status %d, %d bytes", res.StatusCode, n)
				}
			}
			b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

func newMem(testing.TB) server.Backend { return memtest.New(nil) }

// BenchmarkAppendSession measures pipelined appends (100 records × 100 bytes each) through an
// S2S append session over h2c, beside the library, in one run.
func BenchmarkAppendSession(b *testing.B) {
	in := benchInput()
	frame, err := s2api.AppendFrame(nil, s2api.Frame{Body: s2api.AppendAppendInputProto(nil, &in)})
	if err != nil {
		b.Fatal(err)
	}
	payload := int64(in.MeteredSize())
	b.Run("library", func(b *testing.B) {
		env := servertest.Start(b, newMem)
		env.CreateStream(b, "s")
		b.SetBytes(payload)
		for b.Loop() {
			if _, err := env.Backend.Append(b.Context(), servertest.TestBasin, "s", in); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("s2s-h2c", func(b *testing.B) {
		env := servertest.Start(b, newMem)
		env.CreateStream(b, "s")
		pr, pw := io.Pipe()
		req, _ := http.NewRequestWithContext(b.Context(), "POST", env.URL+"/v1/streams/s/records", pr)
		req.Header.Set("S2-Basin", servertest.TestBasin)
		req.Header.Set("Content-Type", "s2s/proto")
		res, err := env.H2C.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		defer pw.Close()
		fr := s2api.NewFrameReader(res.Body, 0)
		const window = 8 // inputs in flight
		b.SetBytes(payload)
		sent, acked := 0, 0
		for b.Loop() {
			for sent-acked >= window {
				if f, err := fr.Next(); err != nil || f.Terminal {
					b.Fatalf("ack: %+v %v", f, err)
				}
				acked++
			}
			if _, err := pw.Write(frame); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		for acked < sent {
			if _, err := fr.Next(); err != nil {
				b.Fatal(err)
			}
			acked++
		}
		b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
	})
}
