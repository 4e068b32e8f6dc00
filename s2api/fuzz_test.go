package s2api_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"

	"github.com/sluice-dev/sluice/s2api"
)

func FuzzDecodeAppendInputJSON(f *testing.F) {
	f.Add([]byte(`{"records":[{"timestamp":1,"headers":[["a","b"],{"name":"c","value":"d"}],"body":"x"}],"match_seq_num":1,"fencing_token":"t"}`), false)
	f.Add([]byte(`{"records":[{"headers":[["","ZmVuY2U="]],"body":"AAE="}]}`), true)
	f.Add([]byte(`{"records":null}`), false)
	f.Fuzz(func(t *testing.T, data []byte, b64 bool) {
		format := s2api.FormatRaw
		if b64 {
			format = s2api.FormatBase64
		}
		in, err := s2api.DecodeAppendInputJSON(data, format)
		if err != nil {
			var ae *s2api.Error
			if !errors.As(err, &ae) || !ae.Code.Malformed() {
				t.Fatalf("error is not bad_json: %v", err)
			}
			return
		}
		_ = in.Validate()
		// What decoded must survive a round trip (raw bytes that are not UTF-8 cannot, so
		// check through base64).
		again, err := s2api.DecodeAppendInputJSON(s2api.EncodeAppendInputJSON(&in, s2api.FormatBase64), s2api.FormatBase64)
		if err != nil || len(again.Records) != len(in.Records) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzDecodeProto(f *testing.F) {
	for _, h := range []string{vecAppendInput, vecAppendAck, vecReadBatch, vecEmptyTail, "", "0a00"} {
		b, _ := hex.DecodeString(h)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(err error) {
			if err == nil {
				return
			}
			var ae *s2api.Error
			if !errors.As(err, &ae) || ae.Code != s2api.CodeBadProto {
				t.Fatalf("error is not bad_proto: %v", err)
			}
		}
		in, err := s2api.DecodeAppendInputProto(data)
		check(err)
		if err == nil {
			again, err := s2api.DecodeAppendInputProto(s2api.AppendAppendInputProto(nil, &in))
			if err != nil || len(again.Records) != len(in.Records) {
				t.Fatalf("AppendInput re-encode: %v", err)
			}
		}
		_, err = s2api.DecodeAppendAckProto(data)
		check(err)
		rb, err := s2api.DecodeReadBatchProto(data)
		check(err)
		if err == nil {
			if _, err := s2api.DecodeReadBatchProto(s2api.AppendReadBatchProto(nil, &rb)); err != nil {
				t.Fatalf("ReadBatch re-encode: %v", err)
			}
		}
		var p s2api.StreamPosition
		check(s2api.DecodeStreamPositionProto(data, &p))
	})
}

func FuzzFrameReader(f *testing.F) {
	f.Add(mustHexF("00000400010203"))
	f.Add(mustHexF("00000580019c7b7d"))
	f.Add(mustHexF("00000260aa"))
	b, _ := s2api.AppendFrame(nil, s2api.Frame{Body: bytes.Repeat([]byte("z"), 2000), Compression: s2api.CompressionZstd})
	f.Add(b)
	b, _ = s2api.AppendFrame(nil, s2api.Frame{Body: bytes.Repeat([]byte("g"), 2000), Compression: s2api.CompressionGzip})
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := s2api.NewFrameReader(bytes.NewReader(data), 64<<10)
		for i := 0; i < 100; i++ {
			fm, err := fr.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !errors.Is(err, s2api.ErrFrame) {
					t.Fatalf("error is not ErrFrame: %v", err)
				}
				return
			}
			if len(fm.Body) > s2api.MaxFramePayload {
				t.Fatalf("body of %d bytes", len(fm.Body))
			}
			if !fm.Terminal {
				enc, err := s2api.AppendFrame(nil, s2api.Frame{Body: fm.Body})
				if err == nil {
					back, err := s2api.NewFrameReader(bytes.NewReader(enc), 0).Next()
					if err != nil || !bytes.Equal(back.Body, fm.Body) {
						t.Fatalf("re-encode: %v", err)
					}
				}
			}
		}
	})
}

func FuzzParseBatchEventID(f *testing.F) {
	f.Add("7,3,27")
	f.Add("1,2")
	f.Fuzz(func(t *testing.T, id string) {
		a, b, c, err := s2api.ParseBatchEventID(id)
		if err != nil {
			return
		}
		a2, b2, c2, err := s2api.ParseBatchEventID(s2api.BatchEventID(a, b, c))
		if err != nil || a2 != a || b2 != b || c2 != c {
			t.Fatalf("round trip of %q", id)
		}
	})
}

func mustHexF(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func FuzzDecodeStreamConfig(f *testing.F) {
	f.Add([]byte(`{"stream":"my-stream","config":{"retention_policy":{"age":604800}}}`))
	f.Add([]byte(`{"storage_class":"express","retention_policy":{"infinite":{}},"timestamping":{"mode":"arrival","uncapped":true},"delete_on_empty":{"min_age_secs":1}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := s2api.DecodeEnsureStreamBody("my-stream", data)
		if err != nil {
			var ae *s2api.Error
			if !errors.As(err, &ae) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid config: %v", err)
		}
	})
}

func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("event: batch\nid: 1,2,3\ndata: {}\n\n: c\n\nevent: ping\ndata: a\ndata: b\n\n"))
	f.Add([]byte("data: x\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := s2api.NewSSEReader(bytes.NewReader(data), 1<<16)
		for i := 0; i < 1000; i++ {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			var buf bytes.Buffer
			if err := s2api.NewSSEWriter(&buf).Event(ev.Event, ev.ID, []byte(ev.Data)); err != nil {
				t.Fatal(err)
			}
		}
	})
}
