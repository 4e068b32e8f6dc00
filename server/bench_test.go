package server_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
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

// BenchmarkAppend and BenchmarkRead run servertest's API benchmarks on the engine over a
// memory store: the HTTP layer's cost with the least storage cost under it. The engine runs
// the same benchmarks on real stores.
func BenchmarkAppend(b *testing.B) { servertest.BenchAppend(b, newEngineBackend) }
func BenchmarkRead(b *testing.B)   { servertest.BenchRead(b, newEngineBackend) }

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
		env := servertest.Start(b, newEngineBackend)
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
		env := servertest.Start(b, newEngineBackend)
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
