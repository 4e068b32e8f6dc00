package objectstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/objectstore/storetest"
)

// benchBackends are the stores the benchmarks compare. "copy" is the baseline: the same bytes
// read through the same buffer with no store at all. S3 runs when SLUICE_TEST_S3_URL is set.
func benchBackends(b *testing.B) []struct {
	name string
	open func(b *testing.B) objectstore.Store
} {
	return []struct {
		name string
		open func(b *testing.B) objectstore.Store
	}{
		{"mem", func(b *testing.B) objectstore.Store { return objectstore.NewMemStore() }},
		{"file", func(b *testing.B) objectstore.Store { return storetest.File(b) }},
		{"file-nosync", func(b *testing.B) objectstore.Store {
			s, err := file.New(b.TempDir(), file.WithNoSync())
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"s3", func(b *testing.B) objectstore.Store {
			if os.Getenv(storetest.EnvS3URL) == "" {
				b.Skipf("%s not set", storetest.EnvS3URL)
			}
			return storetest.S3(b)
		}},
	}
}

var benchSizes = []int{1 << 20, 16 << 20}

// drain reads r through a 256 KiB buffer into nothing, hiding io.WriterTo and io.ReaderFrom so
// that every backend (and the baseline) really moves the bytes.
// Benchmarks run one at a time, so they share one buffer.
func drain(r io.Reader) (int64, error) {
	return io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{r}, drainBuf)
}

var drainBuf = make([]byte, 256<<10)

func benchData(n int) []byte {
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i * 7)
	}
	return data
}

func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	for _, size := range benchSizes {
		data := benchData(size)
		b.Run(fmt.Sprintf("copy/%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				drain(bytes.NewReader(data))
			}
		})
		for _, be := range benchBackends(b) {
			b.Run(fmt.Sprintf("%s/%dMiB", be.name, size>>20), func(b *testing.B) {
				s := be.open(b)
				defer s.Close()
				b.SetBytes(int64(size))
				for b.Loop() {
					if _, err := objectstore.PutBytes(ctx, s, "bench/put", data, objectstore.Unconditional()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	for _, size := range benchSizes {
		data := benchData(size)
		b.Run(fmt.Sprintf("copy/%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				drain(bytes.NewReader(data))
			}
		})
		for _, be := range benchBackends(b) {
			b.Run(fmt.Sprintf("%s/%dMiB", be.name, size>>20), func(b *testing.B) {
				s := be.open(b)
				defer s.Close()
				if _, err := objectstore.PutBytes(ctx, s, "bench/get", data, objectstore.Unconditional()); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
				for b.Loop() {
					obj, err := s.Get(ctx, "bench/get", objectstore.GetOptions{})
					if err != nil {
						b.Fatal(err)
					}
					n, err := drain(obj.Body)
					obj.Body.Close()
					if err != nil || n != int64(size) {
						b.Fatalf("read %d bytes: %v", n, err)
					}
				}
			})
		}
	}
}

// BenchmarkReadAll reads an object whole with ReadAll, from the file store; B/op shows what
// it allocates beside the object's own bytes.
func BenchmarkReadAll(b *testing.B) {
	ctx := context.Background()
	for _, size := range benchSizes {
		data := benchData(size)
		b.Run(fmt.Sprintf("file/%dMiB", size>>20), func(b *testing.B) {
			s := storetest.File(b)
			defer s.Close()
			if _, err := objectstore.PutBytes(ctx, s, "bench/get", data, objectstore.Unconditional()); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				got, _, err := objectstore.ReadAll(ctx, s, "bench/get")
				if err != nil || len(got) != size {
					b.Fatalf("read %d bytes: %v", len(got), err)
				}
			}
		})
	}
}
