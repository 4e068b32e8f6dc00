package batchfmt

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// Benchmarks: encode and decode of one object holding about 1 MiB of records, for three body
// sizes, without and with zstd, each beside its baseline on the same bytes:
//
//	encode/none  vs copy:       one copy() of the object's payload bytes into a reused buffer
//	decode/none  vs copy:       one copy() of the object's bytes
//	encode/zstd  vs zstd:       zstd EncodeAll of the raw payload (the same shared encoder)
//	decode/zstd  vs zstd:       zstd DecodeAll of the stored payload into a reused buffer
//
// Uncompressed encode also runs beside a second reference, gather: Go appends of each
// record's header names, values and body, from where they lie, into one buffer (no framing,
// no checksum): how far reading the records where they lie moves a plain Go program. It is
// not a bound.
//
// Throughput (SetBytes) counts the record bytes (header names, values and bodies), so MB/s
// compare directly; records/s is reported beside it. Run for example:
//
//	go test ./batchfmt -run '^$' -bench . -benchtime 200x
//
// Encoding reads the records where they lie, and how they lie moves it by up to a fifth at
// 1 KiB (the copy reads the finished payload, in one piece, either way), so encode runs on
// two layouts of the same records:
//
//	heap: every body, header slice, name and value an allocation of its own, among other
//	      allocations: records built one by one by a program that embeds the producer
//	wire: names, values and bodies slices of one request buffer, headers in one slab per
//	      append: records as s2api decodes an append request, the daemon's path

var benchBodySizes = []int{100, 1 << 10, 64 << 10}

var benchLayouts = []string{"heap", "wire"}

// benchInput returns benchAppends' records in the given layout.
func benchInput(layout string, bodySize, total int) ([]AppendInput, int, int) {
	ins, n, bytes := benchAppends(bodySize, total)
	if layout == "wire" {
		ins = wireLayout(ins)
	}
	return ins, n, bytes
}

// wireLayout lays the records of ins out as s2api's decoder leaves them: it writes them
// as one protobuf AppendInput message per append (1 repeated AppendRecord: 1 timestamp,
// 2 repeated Header of 1 name and 2 value, 3 body) into one buffer, and returns records
// whose names, values and bodies are slices of that buffer, with each append's headers in
// one slab.
func wireLayout(ins []AppendInput) []AppendInput {
	type span struct{ off, n int }
	var req []byte
	field := func(num protowire.Number, v []byte) span {
		req = protowire.AppendTag(req, num, protowire.BytesType)
		req = protowire.AppendVarint(req, uint64(len(v)))
		req = append(req, v...)
		return span{len(req) - len(v), len(v)}
	}
	var spans []span // per record: body, then name and value of each header
	for _, in := range ins {
		for _, r := range in.Records {
			size := len(protowire.AppendVarint(nil, r.Timestamp)) + 1 + 1 + len(protowire.AppendVarint(nil, uint64(len(r.Body)))) + len(r.Body)
			for _, h := range r.Headers {
				hs := 2 + len(h.Name) + len(h.Value) + 2
				size += 1 + len(protowire.AppendVarint(nil, uint64(hs))) + hs
			}
			req = protowire.AppendTag(req, 1, protowire.BytesType)
			req = protowire.AppendVarint(req, uint64(size))
			req = protowire.AppendTag(req, 1, protowire.VarintType)
			req = protowire.AppendVarint(req, r.Timestamp)
			for _, h := range r.Headers {
				req = protowire.AppendTag(req, 2, protowire.BytesType)
				req = protowire.AppendVarint(req, uint64(2+len(h.Name)+len(h.Value)+2))
				spans = append(spans, field(1, h.Name), field(2, h.Value))
			}
			spans = append(spans, field(3, r.Body))
		}
	}
	req = append([]byte(nil), req...) // one allocation of its exact size
	slice := func(s span) []byte { return req[s.off : s.off+s.n : s.off+s.n] }
	out := make([]AppendInput, len(ins))
	k := 0
	for i, in := range ins {
		out[i] = in
		out[i].Records = make([]Record, len(in.Records))
		nh := 0
		for _, r := range in.Records {
			nh += len(r.Headers)
		}
		slab := make([]Header, 0, nh)
		for j, r := range in.Records {
			h0 := len(slab)
			for range r.Headers {
				slab = append(slab, Header{Name: slice(spans[k]), Value: slice(spans[k+1])})
				k += 2
			}
			r.Headers = slab[h0:len(slab):len(slab)]
			r.Body = slice(spans[k])
			k++
			out[i].Records[j] = r
		}
	}
	return out
}

// benchAppends returns appends of records with one small header and a body of the given
// size, about total record bytes in all, with text-like (compressible) bodies.
func benchAppends(bodySize, total int) ([]AppendInput, int, int) {
	r := rand.New(rand.NewPCG(1, uint64(bodySize)))
	words := []string{"sluice ", "stream ", "record ", "append ", "batch ", "object ", "store ", "manifest ", "commit ", "seq "}
	n := max(1, total/bodySize)
	var ins []AppendInput
	var cur AppendInput
	bytes, metered := 0, 0
	for i := 0; i < n; i++ {
		body := make([]byte, 0, bodySize+16)
		for len(body) < bodySize {
			body = append(body, words[r.IntN(len(words))]...)
			body = fmt.Appendf(body, "%d ", r.IntN(100000))
		}
		body = body[:bodySize]
		rec := Record{Timestamp: 1700000000000 + uint64(i), HasTimestamp: true, Headers: []Header{{Name: []byte("k"), Value: []byte("v1234567")}}, Body: body}
		if len(cur.Records) == MaxAppendRecords || cur.MeteredSize()+rec.MeteredSize() > MaxAppendBytes {
			ins = append(ins, cur)
			cur = AppendInput{}
		}
		cur.Records = append(cur.Records, rec)
		bytes += 1 + 8 + len(body)
		metered += rec.MeteredSize()
	}
	ins = append(ins, cur)
	return ins, n, bytes
}

// encodeAll empties e and encodes ins into one object, which stays valid until e's next
// Reset; any error fails the benchmark.
func encodeAll(b *testing.B, e *Encoder, ins []AppendInput) []byte {
	e.Reset()
	for i := range ins {
		e.Add(&ins[i])
	}
	obj, err := e.Finish()
	if err != nil {
		b.Fatal(err)
	}
	return obj
}

func reportRecords(b *testing.B, records int) {
	b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkEncode(b *testing.B) {
	for _, size := range benchBodySizes {
		for _, layout := range benchLayouts {
			benchEncode(b, layout, size)
		}
	}
}

func benchEncode(b *testing.B, layout string, size int) {
	ins, nrec, nbytes := benchInput(layout, size, 1<<20)
	for _, c := range []Compression{CompressionNone, CompressionZstd} {
		e := NewEncoder(c)
		encodeAll(b, e, ins)
		payload := append([]byte(nil), e.buf[HeaderSize:]...)
		name := fmt.Sprintf("body=%d/%s/%v", size, layout, c)
		b.Run(name+"/batchfmt", func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			b.ReportAllocs()
			for b.Loop() {
				encodeAll(b, e, ins)
			}
			reportRecords(b, nrec)
		})
		b.Run(name+"/baseline", func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			b.ReportAllocs()
			dst := make([]byte, 0, zstdEncoder().MaxEncodedSize(len(payload)))
			for b.Loop() {
				if c == CompressionNone {
					dst = append(dst[:0], payload...)
				} else {
					dst = zstdEncoder().EncodeAll(payload, dst[:0])
				}
			}
			reportRecords(b, nrec)
		})
		if c == CompressionNone {
			b.Run(name+"/gather", func(b *testing.B) {
				b.SetBytes(int64(nbytes))
				dst := make([]byte, 0, len(payload))
				for b.Loop() {
					dst = gatherRecords(dst[:0], ins)
				}
				reportRecords(b, nrec)
			})
		}
	}
}

// gatherRecords appends the bytes of ins's records (each header's name and value, then the
// body) to dst where they lie, with no framing: a second reference for encode (read each
// record where it lies, write it once, in plain Go), where the baseline copies the finished
// payload in one piece. Reported, not a target, and not a bound.
func gatherRecords(dst []byte, ins []AppendInput) []byte {
	for i := range ins {
		for j := range ins[i].Records {
			r := &ins[i].Records[j]
			for _, h := range r.Headers {
				dst = append(dst, h.Name...)
				dst = append(dst, h.Value...)
			}
			dst = append(dst, r.Body...)
		}
	}
	return dst
}

// BenchmarkEncodeFresh encodes 1 KiB bodies, uncompressed, from freshInputs sets of records
// in turn, each about 1 MiB, beside a copy of their payloads in turn: each run reads input
// that the last few runs did not, as a producer does, where BenchmarkEncode reads the same,
// cache-warm input every time.
func BenchmarkEncodeFresh(b *testing.B) {
	const freshInputs = 4
	for _, layout := range benchLayouts {
		var sets [freshInputs][]AppendInput
		var payloads [freshInputs][]byte
		e := NewEncoder(CompressionNone)
		var nrec, nbytes int
		for i := range sets {
			sets[i], nrec, nbytes = benchInput(layout, 1<<10, 1<<20)
			encodeAll(b, e, sets[i])
			payloads[i] = append([]byte(nil), e.buf[HeaderSize:]...)
		}
		name := fmt.Sprintf("body=%d/%s/%v", 1<<10, layout, CompressionNone)
		b.Run(name+"/batchfmt", func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			i := 0
			for b.Loop() {
				encodeAll(b, e, sets[i%freshInputs])
				i++
			}
			reportRecords(b, nrec)
		})
		b.Run(name+"/baseline", func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			dst := make([]byte, 0, len(payloads[0]))
			i := 0
			for b.Loop() {
				dst = append(dst[:0], payloads[i%freshInputs]...)
				i++
			}
			reportRecords(b, nrec)
		})
	}
}

// BenchmarkEncodeBatch encodes one producer-sized object, 32 MiB of 1 KiB records in
// appends of 1 MiB, uncompressed, three ways: into a new encoder that grows as appends come
// (fresh), into a new encoder grown to the object's size first (grown, as the producer does
// from its last batch's size), and into a reused encoder (reused).
func BenchmarkEncodeBatch(b *testing.B) {
	ins, nrec, nbytes := benchAppends(1<<10, 32<<20)
	size := len(encodeAll(b, NewEncoder(CompressionNone), ins))
	run := func(name string, enc func() *Encoder) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			for b.Loop() {
				encodeAll(b, enc(), ins)
			}
			reportRecords(b, nrec)
		})
	}
	run("fresh", func() *Encoder { return NewEncoder(CompressionNone) })
	run("grown", func() *Encoder {
		e := NewEncoder(CompressionNone)
		e.Grow(size)
		return e
	})
	reused := NewEncoder(CompressionNone)
	run("reused", func() *Encoder { return reused })
}

func BenchmarkDecode(b *testing.B) {
	for _, size := range benchBodySizes {
		ins, nrec, nbytes := benchAppends(size, 1<<20)
		for _, c := range []Compression{CompressionNone, CompressionZstd} {
			e := NewEncoder(c)
			obj := append([]byte(nil), encodeAll(b, e, ins)...)
			name := fmt.Sprintf("body=%d/%v", size, c)
			if c == CompressionZstd {
				b.Logf("%s: payload %d bytes, stored %d (ratio %.2f)", name, len(e.buf)-HeaderSize, len(obj)-HeaderSize-TrailerSize, float64(len(e.buf)-HeaderSize)/float64(len(obj)-HeaderSize-TrailerSize))
			}
			var d Decoder
			b.Run(name+"/batchfmt", func(b *testing.B) {
				b.SetBytes(int64(nbytes))
				b.ReportAllocs()
				for b.Loop() {
					batch, err := d.Decode(obj)
					if err != nil {
						b.Fatal(err)
					}
					it := batch.Iter(nil)
					n, sum := 0, 0
					for it.Next() {
						rec := it.Record()
						sum += len(rec.Body) + len(rec.Headers)
						n++
					}
					if it.Err() != nil || n != nrec || sum == 0 {
						b.Fatalf("iterated %d of %d: %v", n, nrec, it.Err())
					}
				}
				reportRecords(b, nrec)
			})
			b.Run(name+"/baseline", func(b *testing.B) {
				b.SetBytes(int64(nbytes))
				b.ReportAllocs()
				stored := obj[HeaderSize : len(obj)-TrailerSize]
				dst := make([]byte, 0, max(len(e.buf), len(obj)))
				for b.Loop() {
					if c == CompressionNone {
						dst = append(dst[:0], obj...)
					} else {
						var err error
						dst, err = zstdDecoder().DecodeAll(stored, dst[:0])
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				reportRecords(b, nrec)
			})
		}
	}
}

// BenchmarkCRC32C shows the checksum's share of the uncompressed paths: hash/crc32's
// CRC-32C over 1 MiB.
func BenchmarkCRC32C(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		crc32.Checksum(buf, castagnoli)
	}
}

// BenchmarkRatio interleaves each operation with its baseline, op by op, so that both see the
// same machine load (the CPUs are shared), and reports speed/baseline as "ratio" (1.0 =
// as fast as the baseline; the target is >= 0.8 for bodies of 1 KiB and more) beside the
// operation's own MB/s and records/s; uncompressed encode also reports "gather-ratio",
// against the gather reference (see above). Encode runs on both layouts (see above).
func BenchmarkRatio(b *testing.B) {
	for _, size := range benchBodySizes {
		ins, nrec, nbytes := benchAppends(size, 1<<20)
		wire := wireLayout(ins)
		for _, c := range []Compression{CompressionNone, CompressionZstd} {
			e := NewEncoder(c)
			obj := append([]byte(nil), encodeAll(b, e, ins)...)
			payload := append([]byte(nil), e.buf[HeaderSize:]...)
			stored := obj[HeaderSize : len(obj)-TrailerSize]
			dst := make([]byte, 0, max(len(obj), zstdEncoder().MaxEncodedSize(len(payload)), len(payload)))
			var d Decoder
			encode := func() { encodeAll(b, e, ins) }
			encodeWire := func() { encodeAll(b, e, wire) }
			encodeBase := func() {
				if c == CompressionNone {
					dst = append(dst[:0], payload...)
				} else {
					dst = zstdEncoder().EncodeAll(payload, dst[:0])
				}
			}
			decode := func() {
				batch, err := d.Decode(obj)
				if err != nil {
					b.Fatal(err)
				}
				it := batch.Iter(nil)
				n := 0
				for it.Next() {
					n += len(it.Record().Body) & 1
				}
				if it.Err() != nil {
					b.Fatal(it.Err())
				}
			}
			decodeBase := func() {
				if c == CompressionNone {
					dst = append(dst[:0], obj...)
					return
				}
				var err error
				if dst, err = zstdDecoder().DecodeAll(stored, dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
			gather := func(in []AppendInput) func() {
				if c != CompressionNone {
					return nil
				}
				return func() { dst = gatherRecords(dst[:0], in) }
			}
			for _, op := range []struct {
				name           string
				run, ref, ref2 func()
			}{{"encode/body=%d/heap/%v", encode, encodeBase, gather(ins)}, {"encode/body=%d/wire/%v", encodeWire, encodeBase, gather(wire)}, {"decode/body=%d/%v", decode, decodeBase, nil}} {
				b.Run(fmt.Sprintf(op.name, size, c), func(b *testing.B) {
					var tOp, tRef, tRef2 time.Duration
					for b.Loop() {
						t0 := time.Now()
						op.run()
						t1 := time.Now()
						op.ref()
						t2 := time.Now()
						tRef += t2.Sub(t1)
						tOp += t1.Sub(t0)
						if op.ref2 != nil {
							op.ref2()
							tRef2 += time.Since(t2)
						}
					}
					b.ReportMetric(float64(tRef)/float64(tOp), "ratio")
					if op.ref2 != nil {
						b.ReportMetric(float64(tRef2)/float64(tOp), "gather-ratio")
					}
					b.ReportMetric(float64(nbytes)*float64(b.N)/tOp.Seconds()/1e6, "MB/s")
					b.ReportMetric(float64(nrec)*float64(b.N)/tOp.Seconds(), "records/s")
					b.ReportMetric(float64(nbytes)*float64(b.N)/tRef.Seconds()/1e6, "base-MB/s")
				})
			}
		}
	}
}

// BenchmarkIterate times the Iterator alone over a decoded object of about 1 MiB (no
// checksum, no decompression): the per-record cost of parsing and checking frames.
func BenchmarkIterate(b *testing.B) {
	for _, size := range benchBodySizes {
		ins, nrec, nbytes := benchAppends(size, 1<<20)
		batch, err := Decode(append([]byte(nil), encodeAll(b, NewEncoder(CompressionNone), ins)...))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("body=%d", size), func(b *testing.B) {
			b.SetBytes(int64(nbytes))
			for b.Loop() {
				it := batch.Iter(nil)
				n := 0
				for it.Next() {
					n += len(it.Record().Body)
				}
				if it.Err() != nil || n == 0 {
					b.Fatal(it.Err())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nrec), "ns/record")
		})
	}
}

// BenchmarkEncodeHead times the encoding of records without bodies, with 0, 1 or 2 of the
// benchmarks' small headers, on about 256 KiB of input that stays in the caches: the
// per-record work beside the copy (the frame's head: lead, timestamp, count, headers, and
// sizing), in ns/record. It is what encoding small records costs, and part of what the
// 1 KiB encode pays per record.
func BenchmarkEncodeHead(b *testing.B) {
	for _, headers := range []int{0, 1, 2} {
		for _, layout := range benchLayouts {
			ins, _, _ := benchAppends(1, 256<<10/27)
			nrec := 0
			for i := range ins {
				for j := range ins[i].Records {
					r := &ins[i].Records[j]
					r.Body = nil
					r.Headers = slices.Repeat(r.Headers[:1], headers)
					nrec++
				}
			}
			if layout == "wire" {
				ins = wireLayout(ins)
			}
			e := NewEncoder(CompressionNone)
			encodeAll(b, e, ins)
			b.Run(fmt.Sprintf("headers=%d/%s", headers, layout), func(b *testing.B) {
				for b.Loop() {
					encodeAll(b, e, ins)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nrec), "ns/record")
			})
		}
	}
}

// TestWireLayout checks the benchmarks' wire layout: the same records (they encode to the
// same object) with every name, value and body in one buffer, in order, and each append's
// headers in one slab.
func TestWireLayout(t *testing.T) {
	for _, size := range benchBodySizes {
		ins, _, _ := benchAppends(size, 256<<10)
		wire := wireLayout(ins)
		heapObj, err := encodeInputs(ins)
		if err != nil {
			t.Fatal(err)
		}
		wireObj, err := encodeInputs(wire)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(heapObj, wireObj) {
			t.Fatalf("body=%d: the wire layout encodes to other bytes", size)
		}
		var prev uintptr // end of the last piece
		for i, in := range wire {
			slab, n := unsafe.Pointer(unsafe.SliceData(in.Records[0].Headers)), 0
			for j, r := range in.Records {
				if at := unsafe.Pointer(unsafe.SliceData(r.Headers)); at != unsafe.Add(slab, n*int(unsafe.Sizeof(Header{}))) {
					t.Fatalf("body=%d: append %d record %d: headers not next to the last record's", size, i, j)
				}
				n += len(r.Headers)
				var pieces [][]byte
				for _, h := range r.Headers {
					pieces = append(pieces, h.Name, h.Value)
				}
				pieces = append(pieces, r.Body)
				for _, p := range pieces {
					at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
					if prev != 0 && (at < prev || at > prev+16) {
						t.Fatalf("body=%d: append %d record %d: a piece at %#x, %d bytes after the last one's end", size, i, j, at, at-prev)
					}
					prev = at + uintptr(len(p))
				}
			}
		}
	}
}

func encodeInputs(ins []AppendInput) ([]byte, error) {
	e := NewEncoder(CompressionNone)
	for i := range ins {
		e.Add(&ins[i])
	}
	return e.Finish()
}
