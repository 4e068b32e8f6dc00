package servertest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
)

// Benchmark shape: appends of 100 records × 100 bytes; reads of 1000 records.
const (
	benchRecords    = 100
	benchRecordSize = 100
	// BenchAppenders is how many appends the append benchmarks keep in flight at once (a
	// backend that commits in groups is measured at its throughput, not at one round trip per
	// append).
	BenchAppenders = 16
)

func benchInput() batchfmt.AppendInput {
	in := batchfmt.AppendInput{Records: make([]batchfmt.Record, benchRecords)}
	body := bytes.Repeat([]byte("x"), benchRecordSize)
	for i := range in.Records {
		in.Records[i] = batchfmt.Record{Body: body, Headers: []batchfmt.Header{{Name: []byte("k"), Value: []byte("v")}}}
	}
	return in
}

// BenchAppend compares appends through the backend itself ("library") with the same appends
// over HTTP/1.1 as JSON and as protobuf, in one run, each with BenchAppenders appends in
// flight. It reports MB/s (metered) and records/s.
func BenchAppend(b *testing.B, f Factory) {
	in := benchInput()
	jsonBody := s2api.EncodeAppendInputJSON(&in, s2api.FormatRaw)
	protoBody := s2api.AppendAppendInputProto(nil, &in)
	payload := int64(in.MeteredSize())
	run := func(b *testing.B, appendOne func(env *Env) error) {
		env := Start(b, f)
		env.CreateStream(b, "s")
		b.SetBytes(payload)
		b.SetParallelism(max(1, BenchAppenders/max(1, testingProcs())))
		var failed atomic.Value
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := appendOne(env); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
	}
	b.Run("library", func(b *testing.B) {
		run(b, func(env *Env) error {
			_, err := env.Backend.Append(b.Context(), TestBasin, "s", in)
			return err
		})
	})
	for _, c := range []struct {
		name, ct string
		body     []byte
	}{{"http-json", "application/json", jsonBody}, {"http-proto", "application/protobuf", protoBody}} {
		b.Run(c.name, func(b *testing.B) {
			run(b, func(env *Env) error {
				req, _ := http.NewRequest("POST", env.URL+"/v1/streams/s/records", bytes.NewReader(c.body))
				req.Header.Set("S2-Basin", TestBasin)
				req.Header.Set("Content-Type", c.ct)
				res, err := env.H1.Do(req)
				if err != nil {
					return err
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					return fmt.Errorf("status %d", res.StatusCode)
				}
				return nil
			})
		})
	}
}

// BenchRead compares reading 1000 records × 100 bytes through a backend cursor ("library")
// with unary reads over HTTP/1.1 as JSON and as protobuf, in one run.
func BenchRead(b *testing.B, f Factory) {
	setup := func(b *testing.B) *Env {
		env := Start(b, f)
		env.CreateStream(b, "s")
		in := benchInput()
		for i := 0; i < 10; i++ {
			if _, err := env.Backend.Append(b.Context(), TestBasin, "s", in); err != nil {
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
			cur, err := env.Backend.Read(b.Context(), TestBasin, "s", s2api.ReadStart{SeqNum: new(uint64)})
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
				req.Header.Set("S2-Basin", TestBasin)
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

// testingProcs is GOMAXPROCS, which RunParallel multiplies the parallelism by.
func testingProcs() int { return runtime.GOMAXPROCS(0) }
