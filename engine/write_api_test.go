package engine

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// withAPI runs fn against the API served over the engine on a memory store.
func withAPI(t *testing.T, fn func(t *testing.T, env *servertest.Env)) {
	fn(t, servertest.Start(t, func(t testing.TB) server.Backend { return newEngine(t, objectstore.NewMemStore(), nil).S2() }))
}

type apiResp struct {
	status int
	ct     string
	body   []byte
}

func apiDo(t *testing.T, env *servertest.Env, method, path string, hdr map[string]string, body []byte) apiResp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, env.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("S2-Basin", servertest.TestBasin)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := env.H1.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return apiResp{res.StatusCode, res.Header.Get("Content-Type"), b}
}

func apiAppend(t *testing.T, env *servertest.Env, stream, body string) apiResp {
	t.Helper()
	return apiDo(t, env, "POST", "/v1/streams/"+stream+"/records", nil, []byte(body))
}

func apiTail(t *testing.T, env *servertest.Env, stream string) s2api.StreamPosition {
	t.Helper()
	r := apiDo(t, env, "GET", "/v1/streams/"+stream+"/records/tail", nil, nil)
	var tr s2api.TailResponse
	if err := json.Unmarshal(r.body, &tr); err != nil {
		t.Fatalf("tail: %d %s", r.status, r.body)
	}
	return tr.Tail
}

func apiRead(t *testing.T, env *servertest.Env, stream, query string) s2api.ReadBatch {
	t.Helper()
	r := apiDo(t, env, "GET", "/v1/streams/"+stream+"/records?"+query, nil, nil)
	if r.status != 200 {
		t.Fatalf("read %s: %d %s", query, r.status, r.body)
	}
	rb, err := s2api.DecodeReadBatchJSON(r.body, s2api.FormatRaw)
	if err != nil {
		t.Fatal(err)
	}
	return rb
}

func apiCode(b []byte) string {
	var e s2api.ErrorInfo
	_ = json.Unmarshal(b, &e)
	return e.Code
}

// recordsJSON builds an append body of n records with bodies of size bodyLen each.
func recordsJSON(n, bodyLen int, extra string) string {
	var sb strings.Builder
	sb.WriteString(`{"records":[`)
	body := strings.Repeat("x", bodyLen)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"body":"` + body + `"}`)
	}
	sb.WriteString("]" + extra + "}")
	return sb.String()
}

// TestWriteLimits: batch limits from the Records seed ("Minimum: 1 record per batch",
// "Maximum: 1000 records per batch", "Total metered size ≤ 1 MiB per batch").
func TestWriteLimits(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		env.CreateStream(t, "s")
		cases := []struct {
			name   string
			body   string
			status int
		}{
			{"zero records", `{"records":[]}`, 422},
			{"1000 records", recordsJSON(1000, 0, ""), 200},
			{"1001 records", recordsJSON(1001, 0, ""), 422},
			// one record, metered 8 + body = exactly 1 MiB
			{"exactly 1 MiB", recordsJSON(1, 1<<20-8, ""), 200},
			{"1 MiB + 1", recordsJSON(1, 1<<20-7, ""), 422},
			// headers count: 8 + 2 + 1 + 1 + body
			{"1 MiB with header", `{"records":[{"headers":[["a","b"]],"body":"` + strings.Repeat("y", 1<<20-12) + `"}]}`, 200},
			{"1 MiB + 1 with header", `{"records":[{"headers":[["a","b"]],"body":"` + strings.Repeat("y", 1<<20-11) + `"}]}`, 422},
			{"empty-name header in envelope", `{"records":[{"headers":[["a","b"],["","fence"]],"body":"x"}]}`, 422},
			{"empty-name header, other value", `{"records":[{"headers":[["","hello"]],"body":"x"}]}`, 422},
			{"fence token 48", `{"records":[{"headers":[["","fence"]],"body":"` + strings.Repeat("t", 48) + `"}]}`, 200},
			{"fence token 49", `{"records":[{"headers":[["","fence"]],"body":"` + strings.Repeat("t", 49) + `"}]}`, 422},
			{"trim 7 bytes", `{"records":[{"headers":[["","trim"]],"body":"1234567"}]}`, 422},
			{"trim 9 bytes", `{"records":[{"headers":[["","trim"]],"body":"123456789"}]}`, 422},
			{"unknown command", `{"records":[{"headers":[["","explode"]]}]}`, 422},
			{"fencing_token 49 condition", `{"records":[{"body":"x"}],"fencing_token":"` + strings.Repeat("t", 49) + `"}`, 422},
		}
		for _, c := range cases {
			before := apiTail(t, env, "s")
			r := apiAppend(t, env, "s", c.body)
			if r.status != c.status {
				t.Errorf("%s: status %d, want %d; %s", c.name, r.status, c.status, r.body)
				continue
			}
			if c.status == 422 {
				if apiCode(r.body) != "invalid" {
					t.Errorf("%s: body %s", c.name, r.body)
				}
				if after := apiTail(t, env, "s"); after.SeqNum != before.SeqNum {
					t.Errorf("%s: a rejected append moved the tail %d -> %d", c.name, before.SeqNum, after.SeqNum)
				}
			}
		}
		// base64 errors
		for _, body := range []string{`{"records":[{"body":"%%%"}]}`, `{"records":[{"headers":[["!!","AA=="]]}]}`, `{"records":[{"headers":[["AA==","*"]]}]}`} {
			r := apiDo(t, env, "POST", "/v1/streams/s/records", map[string]string{"S2-Format": "base64"}, []byte(body))
			if r.status != 400 || apiCode(r.body) != "bad_json" {
				t.Errorf("bad base64 %s: %d %s", body, r.status, r.body)
			}
		}
		// metered size of a base64 record counts decoded bytes: 8 + (1<<20-8) decoded bytes.
		big := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 1<<20-8))
		r := apiDo(t, env, "POST", "/v1/streams/s/records", map[string]string{"S2-Format": "base64"}, []byte(`{"records":[{"body":"`+big+`"}]}`))
		if r.status != 200 {
			t.Errorf("base64 1 MiB metered: %d %s", r.status, r.body)
		}
	})
}

// TestWriteConditions: match_seq_num and fencing_token, 412 bodies per S2-API.md
// ("412 {"seq_num_mismatch": <expected seq_num>} or {"fencing_token_mismatch": "<actual token>"}").
func TestWriteConditions(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		env.CreateStream(t, "s")
		if r := apiAppend(t, env, "s", `{"records":[{"body":"a"},{"body":"b"}]}`); r.status != 200 {
			t.Fatalf("append %d %s", r.status, r.body)
		}
		for _, c := range []struct {
			name, body string
			status     int
			want       string
		}{
			{"match lower", `{"records":[{"body":"x"}],"match_seq_num":1}`, 412, `{"seq_num_mismatch":2}`},
			{"match higher", `{"records":[{"body":"x"}],"match_seq_num":3}`, 412, `{"seq_num_mismatch":2}`},
			{"empty token on fresh stream", `{"records":[{"body":"x"}],"fencing_token":""}`, 200, ""},
			{"match equal", `{"records":[{"body":"x"}],"match_seq_num":3}`, 200, ""},
			{"token mismatch before fence", `{"records":[{"body":"x"}],"fencing_token":"a"}`, 412, `{"fencing_token_mismatch":""}`},
			{"fence with wrong token", `{"records":[{"headers":[["","fence"]],"body":"t1"}],"fencing_token":"zz"}`, 412, `{"fencing_token_mismatch":""}`},
			{"fence", `{"records":[{"headers":[["","fence"]],"body":"t1"}],"fencing_token":""}`, 200, ""},
			{"empty token after fence", `{"records":[{"body":"x"}],"fencing_token":""}`, 412, `{"fencing_token_mismatch":"t1"}`},
			{"token match", `{"records":[{"body":"x"}],"fencing_token":"t1","match_seq_num":5}`, 200, ""},
			{"token match, seq mismatch", `{"records":[{"body":"x"}],"fencing_token":"t1","match_seq_num":5}`, 412, `{"seq_num_mismatch":6}`},
			{"fence and append after in one batch", `{"records":[{"headers":[["","fence"]],"body":"t2"},{"body":"y"}],"fencing_token":"t1"}`, 200, ""},
			{"old token", `{"records":[{"body":"x"}],"fencing_token":"t1"}`, 412, `{"fencing_token_mismatch":"t2"}`},
			{"unfence", `{"records":[{"headers":[["","fence"]],"body":""}],"fencing_token":"t2"}`, 200, ""},
			{"no token after unfence", `{"records":[{"body":"x"}]}`, 200, ""},
		} {
			before := apiTail(t, env, "s")
			r := apiAppend(t, env, "s", c.body)
			if r.status != c.status {
				t.Errorf("%s: status %d, want %d: %s", c.name, r.status, c.status, r.body)
				continue
			}
			if c.want != "" {
				var x, y any
				_ = json.Unmarshal(r.body, &x)
				_ = json.Unmarshal([]byte(c.want), &y)
				if fmt.Sprint(x) != fmt.Sprint(y) {
					t.Errorf("%s: body %s, want %s", c.name, r.body, c.want)
				}
				if r.ct != "application/json" {
					t.Errorf("%s: content type %q", c.name, r.ct)
				}
				if after := apiTail(t, env, "s"); after != before {
					t.Errorf("%s: failed condition moved the tail %+v -> %+v", c.name, before, after)
				}
			}
		}
		// Nothing that failed a condition is readable.
		rb := apiRead(t, env, "s", "seq_num=0")
		if n := len(rb.Records); n != 10 {
			t.Errorf("read %d records, want 10", n)
		}
		for i, r := range rb.Records {
			if r.SeqNum != uint64(i) {
				t.Errorf("record %d has seq_num %d", i, r.SeqNum)
			}
		}
	})
}

// TestWriteTimestamps: "Server enforces monotonicity"; modes and capping.
func TestWriteTimestamps(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		mk := func(name, cfg string) {
			t.Helper()
			r := apiDo(t, env, "POST", "/v1/streams", nil, []byte(`{"stream":"`+name+`","config":`+cfg+`}`))
			if r.status != 201 {
				t.Fatalf("create %s: %d %s", name, r.status, r.body)
			}
		}
		ack := func(r apiResp) s2api.AppendAck {
			t.Helper()
			var a s2api.AppendAck
			if r.status != 200 {
				t.Fatalf("append: %d %s", r.status, r.body)
			}
			_ = json.Unmarshal(r.body, &a)
			return a
		}
		mk("p", `{"timestamping":{"mode":"client-prefer"}}`)
		a := ack(apiAppend(t, env, "p", `{"records":[{"body":"a","timestamp":1000},{"body":"b","timestamp":900},{"body":"c","timestamp":1100}]}`))
		if a.Start.Timestamp != 1000 || a.End.Timestamp != 1100 || a.Tail.Timestamp != 1100 || a.Start.SeqNum != 0 || a.End.SeqNum != 3 || a.Tail.SeqNum != 3 {
			t.Errorf("client-prefer ack %+v", a)
		}
		rb := apiRead(t, env, "p", "seq_num=0")
		if len(rb.Records) != 3 || rb.Records[1].Timestamp != 1000 || rb.Records[2].Timestamp != 1100 {
			t.Errorf("timestamps read %+v", rb.Records)
		}
		// across appends: backwards is raised to the tail timestamp
		a = ack(apiAppend(t, env, "p", `{"records":[{"body":"d","timestamp":500}]}`))
		if a.Start.Timestamp != 1100 || a.End.Timestamp != 1100 {
			t.Errorf("across appends ack %+v", a)
		}
		// timestamp 0 given explicitly is a client timestamp (raised to 1100)
		a = ack(apiAppend(t, env, "p", `{"records":[{"body":"e","timestamp":0}]}`))
		if a.Start.Timestamp != 1100 {
			t.Errorf("ts 0 ack %+v", a)
		}
		// no timestamp: arrival
		before := uint64(time.Now().UnixMilli())
		a = ack(apiAppend(t, env, "p", `{"records":[{"body":"f"}]}`))
		if a.Start.Timestamp < before || a.Start.Timestamp > uint64(time.Now().UnixMilli())+5 {
			t.Errorf("arrival ack %+v (before %d)", a, before)
		}
		// a failed condition does not move the tail timestamp
		tail := apiTail(t, env, "p")
		if r := apiAppend(t, env, "p", `{"records":[{"body":"g","timestamp":99999999999999}],"match_seq_num":0}`); r.status != 412 {
			t.Errorf("cond %d %s", r.status, r.body)
		}
		if got := apiTail(t, env, "p"); got != tail {
			t.Errorf("tail %+v after failed append, was %+v", got, tail)
		}

		mk("req", `{"timestamping":{"mode":"client-require"}}`)
		if r := apiAppend(t, env, "req", `{"records":[{"body":"a","timestamp":10},{"body":"b"}]}`); r.status != 422 || apiCode(r.body) != "invalid" {
			t.Errorf("client-require partial: %d %s", r.status, r.body)
		}
		if got := apiTail(t, env, "req"); got.SeqNum != 0 {
			t.Errorf("client-require rejected append moved tail: %+v", got)
		}
		a = ack(apiAppend(t, env, "req", `{"records":[{"body":"a","timestamp":10},{"body":"b","timestamp":5}]}`))
		if a.Start.Timestamp != 10 || a.End.Timestamp != 10 {
			t.Errorf("client-require ack %+v", a)
		}

		mk("arr", `{"timestamping":{"mode":"arrival"}}`)
		future := uint64(time.Now().Add(time.Hour).UnixMilli())
		before = uint64(time.Now().UnixMilli())
		a = ack(apiAppend(t, env, "arr", fmt.Sprintf(`{"records":[{"body":"a","timestamp":%d},{"body":"b","timestamp":1}]}`, future)))
		if a.Start.Timestamp < before || a.Start.Timestamp >= future || a.End.Timestamp < a.Start.Timestamp {
			t.Errorf("arrival ack %+v", a)
		}

		mk("unc", `{"timestamping":{"mode":"client-prefer","uncapped":true}}`)
		a = ack(apiAppend(t, env, "unc", fmt.Sprintf(`{"records":[{"body":"a","timestamp":%d}]}`, future)))
		if a.Start.Timestamp != future {
			t.Errorf("uncapped ack %+v", a)
		}
		// later arrival-time record after a future one: raised to the future one
		a = ack(apiAppend(t, env, "unc", `{"records":[{"body":"b"}]}`))
		if a.Start.Timestamp != future {
			t.Errorf("uncapped then arrival %+v", a)
		}
		mk("cap", `{"timestamping":{"mode":"client-require","uncapped":false}}`)
		before = uint64(time.Now().UnixMilli())
		a = ack(apiAppend(t, env, "cap", fmt.Sprintf(`{"records":[{"body":"a","timestamp":%d}]}`, future)))
		if a.Start.Timestamp >= future || a.Start.Timestamp < before {
			t.Errorf("capped client-require %+v", a)
		}
	})
}

func trimBody(n uint64) string {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return base64.StdEncoding.EncodeToString(b)
}

// TestWriteTrim: trim commands' effect on reads.
func TestWriteTrim(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		env.CreateStream(t, "s")
		b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
		trim := func(n uint64) apiResp {
			return apiDo(t, env, "POST", "/v1/streams/s/records", map[string]string{"S2-Format": "base64"},
				[]byte(`{"records":[{"headers":[["","`+b64("trim")+`"]],"body":"`+trimBody(n)+`"}]}`))
		}
		if r := apiAppend(t, env, "s", recordsJSON(5, 1, "")); r.status != 200 {
			t.Fatal(r.status)
		}
		if r := trim(3); r.status != 200 { // seq 5
			t.Fatalf("trim: %d %s", r.status, r.body)
		}
		rb := apiRead(t, env, "s", "seq_num=0")
		if len(rb.Records) == 0 || rb.Records[0].SeqNum != 3 {
			t.Errorf("after trim 3, first %+v", rb.Records)
		}
		// Trim below the current trim point: no effect.
		if r := trim(1); r.status != 200 { // seq 6
			t.Fatal(r.status)
		}
		rb = apiRead(t, env, "s", "seq_num=0")
		if len(rb.Records) == 0 || rb.Records[0].SeqNum != 3 || len(rb.Records) != 4 {
			t.Errorf("after trim 1 (below), records %d first %+v", len(rb.Records), rb.Records[0].SeqNum)
		}
		// Trim far beyond the tail.
		if r := trim(1000); r.status != 200 { // seq 7
			t.Fatal(r.status)
		}
		tail := apiTail(t, env, "s")
		if tail.SeqNum != 8 {
			t.Errorf("tail %+v", tail)
		}
		if rb = apiRead(t, env, "s", "seq_num=0"); len(rb.Records) != 0 {
			t.Errorf("after trim(1000) at seq 7, the last record, read from 0 gives %d records, want none", len(rb.Records))
		}
		// Appending after a beyond-tail trim works and new records are readable.
		if r := apiAppend(t, env, "s", `{"records":[{"body":"after"}]}`); r.status != 200 {
			t.Fatalf("append after trim: %d %s", r.status, r.body)
		}
		rb = apiRead(t, env, "s", "seq_num=8")
		if len(rb.Records) != 1 || string(rb.Records[0].Body) != "after" {
			t.Errorf("after trim beyond tail, new record not readable: %+v", rb.Records)
		}
		env2Tail := apiTail(t, env, "s")
		if env2Tail.SeqNum != 9 {
			t.Errorf("tail %+v", env2Tail)
		}
	})
}

// TestWriteS2SSession: pipelined appends with match_seq_num; a failure ends the
// session with a terminal frame and nothing after it is appended.
func TestWriteS2SSession(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		env.CreateStream(t, "s")
		sess := env.OpenAppendSession(t, "s")
		send := func(in batchfmt.AppendInput) {
			if !sess.Send(in) {
				t.Fatal("the session stopped reading")
			}
		}
		u := func(v uint64) *uint64 { return &v }
		tok := func(s string) *string { return &s }
		send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("a"), Timestamp: 100, HasTimestamp: true}}, MatchSeqNum: u(0)})
		send(batchfmt.AppendInput{Records: []batchfmt.Record{batchfmt.FenceRecord("f"), {Body: []byte("b"), Timestamp: 50, HasTimestamp: true}}, MatchSeqNum: u(1)})
		send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("c")}}, MatchSeqNum: u(3), FencingToken: tok("f")})
		send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("d")}}, FencingToken: tok("wrong")})
		send(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("e")}}, MatchSeqNum: u(4)})
		want := [][2]uint64{{0, 1}, {1, 3}, {3, 4}}
		for i, w := range want {
			f, err := sess.Next()
			if err != nil || f.Terminal {
				t.Fatalf("ack %d: %+v %v", i, f, err)
			}
			a, _ := s2api.DecodeAppendAckProto(f.Body)
			if a.Start.SeqNum != w[0] || a.End.SeqNum != w[1] || a.Tail.SeqNum < a.End.SeqNum {
				t.Errorf("ack %d %+v", i, a)
			}
			if i == 1 && (a.Start.Timestamp < 100 || a.End.Timestamp != a.Start.Timestamp) {
				t.Errorf("ack %d timestamps %+v", i, a)
			}
		}
		f, err := sess.Next()
		if err != nil || !f.Terminal || f.Status != 412 || string(f.Body) != `{"fencing_token_mismatch":"f"}` {
			t.Fatalf("terminal: %+v %s %v", f, f.Body, err)
		}
		if _, err := sess.Next(); err != io.EOF {
			t.Errorf("after terminal: %v", err)
		}
		if tail := apiTail(t, env, "s"); tail.SeqNum != 4 {
			t.Errorf("tail after session %+v, want 4", tail)
		}
		// A validation error in a session is a terminal 422.
		sess2 := env.OpenAppendSession(t, "s")
		sess2.Send(batchfmt.AppendInput{})
		f, err = sess2.Next()
		if err != nil || !f.Terminal || f.Status != 422 {
			t.Errorf("empty input: %+v %s %v", f, f.Body, err)
		}
	})
}

// TestWriteProto: unary protobuf appends obey the same rules.
func TestWriteProto(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		env.CreateStream(t, "s")
		hdr := map[string]string{"Content-Type": "application/protobuf"}
		post := func(in batchfmt.AppendInput) apiResp {
			return apiDo(t, env, "POST", "/v1/streams/s/records", hdr, s2api.AppendAppendInputProto(nil, &in))
		}
		r := post(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: bytes.Repeat([]byte{1}, 1<<20-8)}}})
		if r.status != 200 {
			t.Errorf("1 MiB proto: %d %s", r.status, r.body)
		}
		r = post(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: bytes.Repeat([]byte{1}, 1<<20-7)}}})
		if r.status != 422 {
			t.Errorf("1 MiB+1 proto: %d %s", r.status, r.body)
		}
		r = post(batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}, MatchSeqNum: func() *uint64 { v := uint64(0); return &v }()})
		if r.status != 412 || r.ct != "application/json" {
			t.Errorf("proto 412: %d %q %s", r.status, r.ct, r.body)
		}
	})
}

// TestWriteReconfigureTimestampingMode: after a stream is reconfigured from
// client-require to client-prefer, an append without timestamps must succeed (seed, Streams:
// "client-prefer (default): Use client-provided timestamp if present / Fall back to server
// arrival time if not provided"). The engine's producer keeps the mode it last read, and
// reads it again before refusing a record for want of a timestamp.
func TestWriteReconfigureTimestampingMode(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		r := apiDo(t, env, "POST", "/v1/streams", nil, []byte(`{"stream":"s","config":{"timestamping":{"mode":"client-require"}}}`))
		if r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		if r := apiAppend(t, env, "s", `{"records":[{"body":"a","timestamp":10}]}`); r.status != 200 {
			t.Fatalf("append: %d %s", r.status, r.body)
		}
		r = apiDo(t, env, "PATCH", "/v1/streams/s", nil, []byte(`{"timestamping":{"mode":"client-prefer"}}`))
		if r.status != 200 || !strings.Contains(string(r.body), `"client-prefer"`) {
			t.Fatalf("reconfigure: %d %s", r.status, r.body)
		}
		for i := 0; i < 3; i++ {
			if r := apiAppend(t, env, "s", `{"records":[{"body":"b"}]}`); r.status != 200 {
				t.Errorf("append %d without timestamp after switching to client-prefer: %d %s", i, r.status, r.body)
			}
		}
	})
}

// TestWriteTrimBeyondTail: a trim command whose argument lies past its own position. The
// Records seed cites S2's lite/src/backend/streamer.rs:210-232 for the trim rules; there the
// trim point becomes min(argument, the trim record's seq_num + 1), so every record up to and
// including the trim record becomes unreadable, and none after it, in the same append or
// later. Both backends must do so.
func TestWriteTrimBeyondTail(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		env.CreateStream(t, "s")
		if r := apiAppend(t, env, "s", recordsJSON(5, 1, "")); r.status != 200 {
			t.Fatal(r.status)
		}
		b64 := base64.StdEncoding.EncodeToString([]byte("trim"))
		r := apiDo(t, env, "POST", "/v1/streams/s/records", map[string]string{"S2-Format": "base64"},
			[]byte(`{"records":[{"headers":[["","`+b64+`"]],"body":"`+trimBody(1000)+`"}]}`)) // gets seq_num 5
		if r.status != 200 {
			t.Fatalf("trim: %d %s", r.status, r.body)
		}
		rb := apiRead(t, env, "s", "seq_num=0")
		if len(rb.Records) != 0 {
			t.Errorf("after trim(1000) at seq_num 5, read from 0 returned seq_nums %v; want none (trim point min(1000, 5+1) = 6)",
				func() (s []uint64) {
					for _, r := range rb.Records {
						s = append(s, r.SeqNum)
					}
					return
				}())
		}
		// Inside an append, the records after the trim record stay readable: the trim point
		// goes at most past the trim record itself (min(1000, 8+1) = 9 here).
		r = apiDo(t, env, "POST", "/v1/streams/s/records", map[string]string{"S2-Format": "base64"},
			[]byte(`{"records":[{"body":"YQ=="},{"body":"Yg=="},{"headers":[["","`+b64+`"]],"body":"`+trimBody(1000)+`"},{"body":"Yw=="},{"body":"ZA=="}]}`)) // seq_nums 6 to 10, the trim at 8
		if r.status != 200 {
			t.Fatalf("append with a trim inside: %d %s", r.status, r.body)
		}
		var got []uint64
		for _, rec := range apiRead(t, env, "s", "seq_num=0").Records {
			got = append(got, rec.SeqNum)
		}
		if fmt.Sprint(got) != "[9 10]" {
			t.Errorf("after a trim(1000) at seq_num 8 inside an append of 6 to 10: read %v, want [9 10]", got)
		}
	})
}

// TestWriteConcurrentMatchSeqNum: of concurrent appends with the same match_seq_num,
// exactly one succeeds; the others get 412 with the new tail and append nothing.
func TestWriteConcurrentMatchSeqNum(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		env.CreateStream(t, "s")
		const n = 12
		res := make(chan apiResp, n)
		for i := 0; i < n; i++ {
			go func() {
				req, _ := http.NewRequestWithContext(t.Context(), "POST", env.URL+"/v1/streams/s/records",
					strings.NewReader(`{"records":[{"body":"a"},{"body":"b"}],"match_seq_num":0}`))
				req.Header.Set("S2-Basin", servertest.TestBasin)
				r, err := env.H1.Do(req)
				if err != nil {
					res <- apiResp{status: -1}
					return
				}
				b, _ := io.ReadAll(r.Body)
				r.Body.Close()
				res <- apiResp{status: r.StatusCode, body: b}
			}()
		}
		ok := 0
		for i := 0; i < n; i++ {
			r := <-res
			switch r.status {
			case 200:
				ok++
			case 412:
				if string(r.body) != `{"seq_num_mismatch":2}` {
					t.Errorf("412 body %s", r.body)
				}
			default:
				t.Errorf("status %d %s", r.status, r.body)
			}
		}
		if ok != 1 {
			t.Errorf("%d appends succeeded, want 1", ok)
		}
		if tail := apiTail(t, env, "s"); tail.SeqNum != 2 {
			t.Errorf("tail %+v", tail)
		}
	})
}

// TestWriteReconfigureOtherModes: switching to arrival or client-require takes effect on
// the next append.
func TestWriteReconfigureOtherModes(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		env.CreateStream(t, "s")
		if r := apiAppend(t, env, "s", `{"records":[{"body":"a","timestamp":10}]}`); r.status != 200 {
			t.Fatal(r.status)
		}
		if r := apiDo(t, env, "PATCH", "/v1/streams/s", nil, []byte(`{"timestamping":{"mode":"arrival"}}`)); r.status != 200 {
			t.Fatal(r.status)
		}
		before := uint64(time.Now().UnixMilli())
		r := apiAppend(t, env, "s", `{"records":[{"body":"b","timestamp":20}]}`)
		var a s2api.AppendAck
		_ = json.Unmarshal(r.body, &a)
		if r.status != 200 || a.Start.Timestamp < before {
			t.Errorf("after switching to arrival: %d %s", r.status, r.body)
		}
		if r := apiDo(t, env, "PATCH", "/v1/streams/s", nil, []byte(`{"timestamping":{"mode":"client-require"}}`)); r.status != 200 {
			t.Fatal(r.status)
		}
		before = apiTail(t, env, "s").SeqNum
		if r := apiAppend(t, env, "s", `{"records":[{"body":"c"}]}`); r.status != 422 {
			t.Errorf("after switching to client-require: %d %s", r.status, r.body)
		}
		if got := apiTail(t, env, "s").SeqNum; got != before {
			t.Errorf("rejected append moved the tail %d -> %d", before, got)
		}
	})
}

// TestWriteBigHeader: a header value over 64 KiB within the 1 MiB limit round-trips.
func TestWriteBigHeader(t *testing.T) {
	withAPI(t, func(t *testing.T, env *servertest.Env) {
		env.CreateStream(t, "s")
		v := strings.Repeat("v", 200000)
		r := apiAppend(t, env, "s", `{"records":[{"headers":[["h","`+v+`"],["`+strings.Repeat("n", 70000)+`","x"]],"body":"b"}]}`)
		if r.status != 200 {
			t.Logf("append: %d %s", r.status, r.body)
			return
		}
		rb := apiRead(t, env, "s", "seq_num=0")
		if len(rb.Records) != 1 || len(rb.Records[0].Headers) != 2 || string(rb.Records[0].Headers[0].Value) != v || len(rb.Records[0].Headers[1].Name) != 70000 {
			t.Errorf("big header did not round-trip")
		}
	})
}
