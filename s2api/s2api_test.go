package s2api_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/s2api"
)

func u64(v uint64) *uint64 { return &v }
func str(v string) *string { return &v }

// Vectors produced by the SDK's own generated protobuf code (@s2-dev/streamstore 0.27.0,
// dist/esm/generated/proto/s2.js, toBinary), so these check byte-for-byte agreement with it.
const (
	vecAppendInput = "0a160880d095ffbc3112060a016b1201761a0568656c6c6f0a0e1207120566656e63651a03746f6b10071a03746f6b"
	vecAppendAck   = "0a0210051204080210061a0408021006"
	vecReadBatch   = "0a1508031080d095ffbc311a060a01611201ff22020001120908041080d095ffbc31"
	vecEmptyTail   = "1200"
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProtoVectorsMatchSDK(t *testing.T) {
	in := batchfmt.AppendInput{
		Records: []batchfmt.Record{
			{Timestamp: 1700000000000, HasTimestamp: true, Headers: []batchfmt.Header{{Name: []byte("k"), Value: []byte("v")}}, Body: []byte("hello")},
			batchfmt.FenceRecord("tok"),
		},
		MatchSeqNum:  u64(7),
		FencingToken: str("tok"),
	}
	if got := hex.EncodeToString(s2api.AppendAppendInputProto(nil, &in)); got != vecAppendInput {
		t.Errorf("AppendInput encoding\n got %s\nwant %s", got, vecAppendInput)
	}
	dec, err := s2api.DecodeAppendInputProto(mustHex(t, vecAppendInput))
	if err != nil {
		t.Fatal(err)
	}
	if len(dec.Records) != 2 || string(dec.Records[0].Body) != "hello" || !dec.Records[0].HasTimestamp ||
		dec.Records[0].Timestamp != 1700000000000 || dec.Records[1].Command() != batchfmt.CommandFence ||
		*dec.MatchSeqNum != 7 || *dec.FencingToken != "tok" || dec.Records[1].HasTimestamp {
		t.Errorf("AppendInput decoded wrongly: %+v", dec)
	}

	ack := s2api.AppendAck{Start: s2api.StreamPosition{0, 5}, End: s2api.StreamPosition{2, 6}, Tail: s2api.StreamPosition{2, 6}}
	if got := hex.EncodeToString(s2api.AppendAppendAckProto(nil, &ack)); got != vecAppendAck {
		t.Errorf("AppendAck encoding\n got %s\nwant %s", got, vecAppendAck)
	}
	dack, err := s2api.DecodeAppendAckProto(mustHex(t, vecAppendAck))
	if err != nil || dack != ack {
		t.Errorf("AppendAck decode = %+v, %v", dack, err)
	}

	rb := s2api.ReadBatch{
		Records: []s2api.SequencedRecord{{SeqNum: 3, Timestamp: 1700000000000, Headers: []batchfmt.Header{{Name: []byte("a"), Value: []byte{0xff}}}, Body: []byte{0, 1}}},
		Tail:    &s2api.StreamPosition{SeqNum: 4, Timestamp: 1700000000000},
	}
	if got := hex.EncodeToString(s2api.AppendReadBatchProto(nil, &rb)); got != vecReadBatch {
		t.Errorf("ReadBatch encoding\n got %s\nwant %s", got, vecReadBatch)
	}
	drb, err := s2api.DecodeReadBatchProto(mustHex(t, vecReadBatch))
	if err != nil || !reflect.DeepEqual(drb, rb) {
		t.Errorf("ReadBatch decode = %+v, %v", drb, err)
	}
	empty := s2api.ReadBatch{Tail: &s2api.StreamPosition{}}
	if got := hex.EncodeToString(s2api.AppendReadBatchProto(nil, &empty)); got != vecEmptyTail {
		t.Errorf("heartbeat ReadBatch = %s, want %s", got, vecEmptyTail)
	}
}

func TestProtoRejectsMalformed(t *testing.T) {
	cases := map[string]string{
		"truncated varint":     "10",
		"truncated bytes":      "0a05",
		"records as varint":    "0801",
		"token as varint":      "1801",
		"header as varint":     "0a021001",
		"bad tag":              "00",
		"match_seq_num as len": "120100",
		"timestamp wrong type": "0a020a00",
	}
	for name, h := range cases {
		_, err := s2api.DecodeAppendInputProto(mustHex(t, h))
		var ae *s2api.Error
		if !errors.As(err, &ae) || ae.Code != s2api.CodeBadProto || !ae.Code.Malformed() {
			t.Errorf("%s: err = %v, want bad_proto", name, err)
		}
	}
	// Unknown fields are skipped.
	in, err := s2api.DecodeAppendInputProto(mustHex(t, "2001"+"0a00"))
	if err != nil || len(in.Records) != 1 {
		t.Errorf("unknown field: %+v, %v", in, err)
	}
}

func seed(t testing.TB) uint64 {
	t.Helper()
	return testseed.Get(t)
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, r.IntN(n+1))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	if len(b) == 0 {
		return nil
	}
	return b
}

func TestProtoRoundTripRandom(t *testing.T) {
	s := seed(t)
	r := rand.New(rand.NewPCG(s, 1))
	for i := 0; i < 300; i++ {
		var in batchfmt.AppendInput
		for j := r.IntN(5); j >= 0; j-- {
			rec := batchfmt.Record{Body: randBytes(r, 40)}
			if r.IntN(2) == 0 {
				rec.Timestamp, rec.HasTimestamp = r.Uint64(), true
			}
			for k := r.IntN(3); k > 0; k-- {
				rec.Headers = append(rec.Headers, batchfmt.Header{Name: randBytes(r, 8), Value: randBytes(r, 8)})
			}
			in.Records = append(in.Records, rec)
		}
		if r.IntN(2) == 0 {
			in.MatchSeqNum = u64(r.Uint64())
		}
		if r.IntN(2) == 0 {
			in.FencingToken = str(string(randBytes(r, 10)))
		}
		got, err := s2api.DecodeAppendInputProto(s2api.AppendAppendInputProto(nil, &in))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, in) {
			t.Fatalf("round trip %d:\n got %+v\nwant %+v", i, got, in)
		}
		rb := s2api.ReadBatch{}
		for j, rec := range in.Records {
			rb.Records = append(rb.Records, s2api.SequencedRecord{SeqNum: uint64(j) * r.Uint64N(1000), Timestamp: r.Uint64(), Headers: rec.Headers, Body: rec.Body})
		}
		if r.IntN(2) == 0 {
			rb.Tail = &s2api.StreamPosition{SeqNum: r.Uint64(), Timestamp: r.Uint64()}
		}
		grb, err := s2api.DecodeReadBatchProto(s2api.AppendReadBatchProto(nil, &rb))
		if err != nil || !reflect.DeepEqual(grb, rb) {
			t.Fatalf("ReadBatch round trip %d: %+v, %v; want %+v", i, grb, err, rb)
		}
	}
}

func TestAppendJSONHeadersBothShapes(t *testing.T) {
	body := `{"records":[{"timestamp":1709481600000,"headers":[{"name":"event-type","value":"order.created"},["k","v"]],"body":"eyJvcmRlcl9pZCI6MTIzfQ=="}],"match_seq_num":3,"fencing_token":"t"}`
	in, err := s2api.DecodeAppendInputJSON([]byte(body), s2api.FormatRaw)
	if err != nil {
		t.Fatal(err)
	}
	r := in.Records[0]
	if !r.HasTimestamp || r.Timestamp != 1709481600000 || string(r.Headers[0].Name) != "event-type" ||
		string(r.Headers[0].Value) != "order.created" || string(r.Headers[1].Name) != "k" ||
		string(r.Body) != "eyJvcmRlcl9pZCI6MTIzfQ==" || *in.MatchSeqNum != 3 || *in.FencingToken != "t" {
		t.Errorf("decoded %+v", in)
	}
	in, err = s2api.DecodeAppendInputJSON([]byte(body), s2api.FormatBase64)
	if err == nil {
		t.Fatal("base64 format accepted a header name that is not base64")
	}
	in, err = s2api.DecodeAppendInputJSON([]byte(`{"records":[{"headers":[["","ZmVuY2U="]],"body":"AAE="}]}`), s2api.FormatBase64)
	if err != nil || string(in.Records[0].Headers[0].Value) != "fence" || !bytes.Equal(in.Records[0].Body, []byte{0, 1}) || in.Records[0].HasTimestamp {
		t.Errorf("base64: %+v, %v", in, err)
	}
	for _, bad := range []string{``, `{}`, `{"records":[{"headers":[["a"]]}]}`, `{"records":[{"headers":[{"name":"a"}]}]}`, `{"records":[]} x`, `{"records":[{"timestamp":-1}]}`, `[]`} {
		_, err := s2api.DecodeAppendInputJSON([]byte(bad), s2api.FormatRaw)
		var ae *s2api.Error
		if !errors.As(err, &ae) || ae.Code != s2api.CodeBadJSON {
			t.Errorf("%q: err = %v, want bad_json", bad, err)
		}
	}
}

func TestReadBatchJSONUsesPairs(t *testing.T) {
	rb := s2api.ReadBatch{Records: []s2api.SequencedRecord{{SeqNum: 1, Timestamp: 2, Headers: []batchfmt.Header{{Name: []byte("n"), Value: []byte("v")}}, Body: []byte("b")}}, Tail: &s2api.StreamPosition{SeqNum: 2, Timestamp: 2}}
	got := string(s2api.EncodeReadBatchJSON(&rb, s2api.FormatRaw))
	want := `{"records":[{"seq_num":1,"timestamp":2,"headers":[["n","v"]],"body":"b"}],"tail":{"seq_num":2,"timestamp":2}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got = string(s2api.EncodeReadBatchJSON(&rb, s2api.FormatBase64))
	want = `{"records":[{"seq_num":1,"timestamp":2,"headers":[["bg==","dg=="]],"body":"Yg=="}],"tail":{"seq_num":2,"timestamp":2}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	back, err := s2api.DecodeReadBatchJSON([]byte(got), s2api.FormatBase64)
	if err != nil || !reflect.DeepEqual(back, rb) {
		t.Errorf("round trip %+v, %v", back, err)
	}
}

func TestErrorResponses(t *testing.T) {
	cases := []struct {
		err    error
		status int
		body   string
	}{
		{&s2api.SeqNumMismatchError{Expected: 42}, 412, `{"seq_num_mismatch":42}`},
		{&s2api.FencingTokenMismatchError{Actual: "abc"}, 412, `{"fencing_token_mismatch":"abc"}`},
		{&s2api.RangeNotSatisfiableError{Tail: s2api.StreamPosition{SeqNum: 9, Timestamp: 10}}, 416, `{"tail":{"seq_num":9,"timestamp":10}}`},
		{s2api.Errorf(s2api.CodeStreamNotFound, "stream x not found"), 404, `{"code":"stream_not_found","message":"stream x not found"}`},
		{errors.Join(errors.New("ctx"), s2api.Errorf(s2api.CodeBasinNotFound, "b")), 404, `{"code":"basin_not_found","message":"b"}`},
		{s2api.ErrAlreadyExists, 409, `{"code":"resource_already_exists","message":"resource_already_exists"}`},
		{&batchfmt.AppendError{Reason: batchfmt.ReasonEmptyAppend, Detail: "empty"}, 422, `{"code":"invalid","message":"invalid append: empty"}`},
		{errors.New("boom"), 500, `{"code":"other","message":"boom"}`},
	}
	for _, c := range cases {
		st, body := s2api.ErrorResponse(c.err)
		if st != c.status || string(body) != c.body {
			t.Errorf("%v: got %d %s, want %d %s", c.err, st, body, c.status, c.body)
		}
		if st == 412 || st == 416 {
			back := s2api.DecodeErrorBody(st, body)
			if back.Error() != c.err.Error() {
				t.Errorf("DecodeErrorBody(%d, %s) = %v, want %v", st, body, back, c.err)
			}
		}
	}
	if !errors.Is(s2api.Errorf(s2api.CodeStreamNotFound, "x"), s2api.ErrStreamNotFound) || errors.Is(s2api.Errorf(s2api.CodeBasinNotFound, "x"), s2api.ErrStreamNotFound) {
		t.Error("sentinel matching is wrong")
	}
	want := map[s2api.Code]int{s2api.CodeBadHeader: 400, s2api.CodeAuthn: 401, s2api.CodePermissionDenied: 403, s2api.CodeTransactionConflict: 409, s2api.CodeInvalid: 422, s2api.CodeRateLimited: 429, s2api.CodeStorage: 500, s2api.CodeUnavailable: 503, s2api.CodeUpstreamTimeout: 504, "unheard_of": 500}
	for c, st := range want {
		if c.Status() != st {
			t.Errorf("%s.Status() = %d, want %d", c, c.Status(), st)
		}
	}
}

func TestFrames(t *testing.T) {
	var stream []byte
	payload := bytes.Repeat([]byte("abcdefgh"), 300)
	for _, f := range []s2api.Frame{
		{Body: []byte{1, 2, 3}},
		{Body: payload, Compression: s2api.CompressionGzip},
		{Body: payload, Compression: s2api.CompressionZstd},
		{Body: []byte{}, ReconnectAdvised: true},
		s2api.TerminalErrorFrame(&s2api.SeqNumMismatchError{Expected: 5}),
	} {
		var err error
		stream, err = s2api.AppendFrame(stream, f)
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := hex.EncodeToString(stream[:7]); got != "00000400010203" {
		t.Errorf("first frame = %s", got)
	}
	fr := s2api.NewFrameReader(bytes.NewReader(stream), 0)
	want := [][]byte{{1, 2, 3}, payload, payload, {}}
	for i, w := range want {
		f, err := fr.Next()
		if err != nil || f.Terminal || !bytes.Equal(f.Body, w) {
			t.Fatalf("frame %d: %+v %v", i, f, err)
		}
		if i == 3 && !f.ReconnectAdvised {
			t.Error("reconnect advised flag lost")
		}
	}
	f, err := fr.Next()
	if err != nil || !f.Terminal || f.Status != http.StatusPreconditionFailed {
		t.Fatalf("terminal frame: %+v %v", f, err)
	}
	var sm *s2api.SeqNumMismatchError
	if !errors.As(f.Err(), &sm) || sm.Expected != 5 {
		t.Errorf("terminal error = %v", f.Err())
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Errorf("after last frame: %v, want io.EOF", err)
	}
	for name, h := range map[string]string{
		"zero length":      "000000",
		"truncated":        "00000500",
		"bad compression":  "00000260aa",
		"reserved bits":    "00000101",
		"terminal short":   "0000028001",
		"terminal gzip":    "000004c0c80000",
		"bad gzip":         "00000340aabb",
		"truncated prefix": "0000",
	} {
		_, err := s2api.NewFrameReader(bytes.NewReader(mustHex(t, h)), 0).Next()
		if !errors.Is(err, s2api.ErrFrame) {
			t.Errorf("%s: err = %v, want ErrFrame", name, err)
		}
		if st, _ := s2api.ErrorResponse(err); st != 400 {
			t.Errorf("%s: status %d", name, st)
		}
	}
	big := []byte{0x20, 0x00, 0x01, 0x00}
	if _, err := s2api.NewFrameReader(bytes.NewReader(big), 0).Next(); !errors.Is(err, s2api.ErrFrame) {
		t.Errorf("oversized frame: %v", err)
	}
}

func TestSSEWriterAndReader(t *testing.T) {
	var buf bytes.Buffer
	w := s2api.NewSSEWriter(&buf)
	rb := s2api.ReadBatch{Records: []s2api.SequencedRecord{{SeqNum: 7, Timestamp: 1, Body: []byte("x")}}, Tail: &s2api.StreamPosition{SeqNum: 8, Timestamp: 1}}
	if err := w.Batch(&rb, s2api.FormatRaw, 7, 3, 27); err != nil {
		t.Fatal(err)
	}
	if err := w.Ping(1234, rb.Tail); err != nil {
		t.Fatal(err)
	}
	if err := w.Event("x", "", []byte("a\nb")); err != nil {
		t.Fatal(err)
	}
	if err := w.Error(s2api.Errorf(s2api.CodeUnavailable, "later")); err != nil {
		t.Fatal(err)
	}
	want := "event: batch\nid: 7,3,27\ndata: {\"records\":[{\"seq_num\":7,\"timestamp\":1,\"headers\":[],\"body\":\"x\"}],\"tail\":{\"seq_num\":8,\"timestamp\":1}}\n\n" +
		"event: ping\ndata: {\"timestamp\":1234,\"tail\":{\"seq_num\":8,\"timestamp\":1}}\n\n" +
		"event: x\ndata: a\ndata: b\n\n" +
		"event: error\ndata: {\"code\":\"unavailable\",\"message\":\"later\"}\n\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	rd := s2api.NewSSEReader(strings.NewReader(": comment\n\n"+buf.String()), 1<<20)
	var evs []s2api.SSEEvent
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != 4 || evs[0].ID != "7,3,27" || evs[2].Data != "a\nb" || evs[3].Event != "error" {
		t.Errorf("parsed %+v", evs)
	}
	last, n, b, err := s2api.ParseBatchEventID(evs[0].ID)
	if err != nil || last != 7 || n != 3 || b != 27 {
		t.Errorf("ParseBatchEventID = %d %d %d %v", last, n, b, err)
	}
}

func TestParseReadQuery(t *testing.T) {
	q, _ := url.ParseQuery("seq_num=5&count=10&bytes=0&clamp=true&wait=3")
	r, err := s2api.ParseReadQuery(q)
	if err != nil || *r.Start.SeqNum != 5 || *r.Count != 10 || r.Bytes != nil || !r.Start.Clamp || *r.Wait != 3 {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = s2api.ParseReadQuery(url.Values{})
	if err != nil || r.Start.TailOffset == nil || *r.Start.TailOffset != 0 {
		t.Fatalf("default start: %+v %v", r, err)
	}
	if _, ok := r.SessionIdle(); ok {
		t.Error("an unbounded read without wait must follow forever")
	}
	for in, code := range map[string]s2api.Code{"seq_num=1&timestamp=2": s2api.CodeBadQuery, "wait=61": s2api.CodeBadQuery, "count=x": s2api.CodeBadQuery, "clamp=maybe": s2api.CodeBadQuery, "seq_num=-1": s2api.CodeBadQuery} {
		q, _ := url.ParseQuery(in)
		_, err := s2api.ParseReadQuery(q)
		var ae *s2api.Error
		if !errors.As(err, &ae) || ae.Code != code {
			t.Errorf("%s: %v, want %s", in, err, code)
		}
	}
}

func TestStreamConfigJSON(t *testing.T) {
	c, err := s2api.DecodeEnsureStreamBody("my-stream", []byte(`{"stream":"my-stream","config":{"storage_class":"express","retention_policy":{"age":2592000},"timestamping":{"mode":"client-require","uncapped":true},"delete_on_empty":{"min_age_secs":7200}}}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(c)
	want := `{"storage_class":"express","retention_policy":{"age":2592000},"timestamping":{"mode":"client-require","uncapped":true},"delete_on_empty":{"min_age_secs":7200}}`
	if string(out) != want {
		t.Errorf("got %s", out)
	}
	c, err = s2api.DecodeEnsureStreamBody("s", []byte(`{"retention_policy":{"infinite":{}}}`))
	if err != nil || !c.RetentionPolicy.Infinite {
		t.Errorf("bare config: %+v %v", c, err)
	}
	if _, err := s2api.DecodeEnsureStreamBody("s", []byte(`{"stream":"other"}`)); !errors.Is(err, s2api.ErrInvalid) {
		t.Errorf("mismatched name: %v", err)
	}
	_, err = s2api.DecodeStreamConfigJSON([]byte(`{"storage_class":"gold","timestamping":{"mode":"whenever"},"retention_policy":{"age":0}}`))
	if n := strings.Count(err.Error(), "s2api: invalid"); n != 3 {
		t.Errorf("want all 3 problems reported, got %v", err)
	}
	if err := s2api.ValidateBasinName("my-basin"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"short", "-leading-hyphen", "UPPERCASE-name", "trailing-hyphen-"} {
		if s2api.ValidateBasinName(bad) == nil {
			t.Errorf("basin name %q accepted", bad)
		}
	}
}

// referenceReadBatchJSON is the encoding/json rendering AppendReadBatchJSON must agree with.
func referenceReadBatchJSON(b *s2api.ReadBatch, f s2api.Format) []byte {
	type rec struct {
		SeqNum    uint64      `json:"seq_num"`
		Timestamp uint64      `json:"timestamp"`
		Headers   [][2]string `json:"headers"`
		Body      string      `json:"body"`
	}
	enc := func(p []byte) string {
		if f == s2api.FormatBase64 {
			return base64.StdEncoding.EncodeToString(p)
		}
		return string(p)
	}
	out := struct {
		Records []rec                 `json:"records"`
		Tail    *s2api.StreamPosition `json:"tail,omitempty"`
	}{Records: []rec{}, Tail: b.Tail}
	for _, r := range b.Records {
		hs := [][2]string{}
		for _, h := range r.Headers {
			hs = append(hs, [2]string{enc(h.Name), enc(h.Value)})
		}
		out.Records = append(out.Records, rec{r.SeqNum, r.Timestamp, hs, enc(r.Body)})
	}
	data, _ := json.Marshal(out)
	return data
}

func TestReadBatchJSONMatchesEncodingJSON(t *testing.T) {
	s := seed(t)
	r := rand.New(rand.NewPCG(s, 2))
	special := [][]byte{[]byte("\"\\\n\r\t\x00\x1f<>&"), []byte("\u2028\u2029é€😀"), {0xff, 0xfe, 'a', 0xc3}, nil}
	for i := 0; i < 500; i++ {
		var rb s2api.ReadBatch
		for j := r.IntN(4); j > 0; j-- {
			body := randBytes(r, 30)
			if r.IntN(3) == 0 {
				body = special[r.IntN(len(special))]
			}
			rec := s2api.SequencedRecord{SeqNum: r.Uint64(), Timestamp: r.Uint64(), Body: body}
			for k := r.IntN(3); k > 0; k-- {
				rec.Headers = append(rec.Headers, batchfmt.Header{Name: randBytes(r, 5), Value: special[r.IntN(len(special))]})
			}
			rb.Records = append(rb.Records, rec)
		}
		if r.IntN(2) == 0 {
			rb.Tail = &s2api.StreamPosition{SeqNum: r.Uint64(), Timestamp: r.Uint64()}
		}
		for _, f := range []s2api.Format{s2api.FormatRaw, s2api.FormatBase64} {
			got := s2api.EncodeReadBatchJSON(&rb, f)
			want := referenceReadBatchJSON(&rb, f)
			var a, b any
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatalf("invalid JSON %q: %v", got, err)
			}
			_ = json.Unmarshal(want, &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("format %v:\n got %s\nwant %s", f, got, want)
			}
		}
	}
}

func BenchmarkEncodeReadBatchJSON(b *testing.B) {
	rb := s2api.ReadBatch{Tail: &s2api.StreamPosition{SeqNum: 1000}}
	for i := 0; i < 1000; i++ {
		rb.Records = append(rb.Records, s2api.SequencedRecord{SeqNum: uint64(i), Timestamp: 1700000000000, Headers: []batchfmt.Header{{Name: []byte("k"), Value: []byte("v")}}, Body: bytes.Repeat([]byte("x"), 100)})
	}
	b.SetBytes(int64(rb.MeteredSize()))
	b.Run("hand-rolled", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = s2api.AppendReadBatchJSON(buf[:0], &rb, s2api.FormatRaw)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			_ = referenceReadBatchJSON(&rb, s2api.FormatRaw)
		}
	})
}

// TestAppendFrameTooLarge: a frame over MaxFrameBytes is refused and dst is returned as it
// was, whatever the compression.
func TestAppendFrameTooLarge(t *testing.T) {
	big := make([]byte, s2api.MaxFrameBytes)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range big { // xorshift: bytes no compressor shrinks below the limit
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		big[i] = byte(x)
	}
	dst := []byte("kept")
	for _, c := range []s2api.Compression{s2api.CompressionNone, s2api.CompressionGzip, s2api.CompressionZstd} {
		got, err := s2api.AppendFrame(dst, s2api.Frame{Body: big, Compression: c})
		if !errors.Is(err, s2api.ErrFrame) || string(got) != "kept" {
			t.Fatalf("compression %d: %d bytes, %v; want ErrFrame and dst unchanged", c, len(got), err)
		}
	}
}
