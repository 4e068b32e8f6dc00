package servertest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
)

func testAuth(t *testing.T, fac Factory) {
	env := startServer(t, fac, withToken("s3cret"))
	r := env.do(t, "GET", "/v1/basins", nil, nil)
	expect(t, "no token", r, 401, `{"code":"authn","message":"missing or invalid bearer token"}`)
	r = env.do(t, "GET", "/v1/basins", map[string]string{"Authorization": "Bearer wrong"}, nil)
	expect(t, "wrong token", r, 401, "")
	r = env.do(t, "GET", "/v1/basins", map[string]string{"Authorization": "Bearer s3cret"}, nil)
	expect(t, "right token", r, 200, "")
}

func testBasinRoutes(t *testing.T, fac Factory) {
	env := startServer(t, fac)
	r := env.do(t, "POST", "/v1/basins", nil, []byte(`{"basin":"second-basin","config":{"create_stream_on_append":true}}`))
	expect(t, "create", r, 201, "")
	var info s2api.BasinInfo
	mustJSON(t, r.body, &info)
	if info.Name != "second-basin" {
		t.Errorf("info %s", r.body)
	}
	expect(t, "create again", env.do(t, "POST", "/basins", nil, []byte(`{"basin":"second-basin"}`)), 409, "")
	expect(t, "bad name", env.do(t, "POST", "/basins", nil, []byte(`{"basin":"Bad"}`)), 422, "")
	expect(t, "bad json", env.do(t, "POST", "/basins", nil, []byte(`{"basin":`)), 400, "")
	expect(t, "config", env.do(t, "GET", "/v1/basins/second-basin", nil, nil), 200,
		`{"create_stream_on_append":true,"create_stream_on_read":false}`)
	expect(t, "reconfigure", env.do(t, "PATCH", "/v1/basins/second-basin", nil, []byte(`{"create_stream_on_read":true}`)), 200,
		`{"create_stream_on_append":true,"create_stream_on_read":true}`)
	// An ensure has PUT's meaning: the config becomes the one given, or the defaults.
	r = env.do(t, "PUT", "/v1/basins/second-basin", nil, []byte(`{"config":{"create_stream_on_read":true,"default_stream_config":{"retention_policy":{"age":77}}}}`))
	expect(t, "ensure existing with a config", r, 200, "")
	if got := r.header.Get("S2-Provision-Result"); got != "updated" {
		t.Errorf("ensure with a config: S2-Provision-Result %q, want updated", got)
	}
	expect(t, "ensured config", env.do(t, "GET", "/v1/basins/second-basin", nil, nil), 200,
		`{"default_stream_config":{"retention_policy":{"age":77}},"create_stream_on_append":false,"create_stream_on_read":true}`)
	expect(t, "reconfigure a null default", env.do(t, "PATCH", "/v1/basins/second-basin", nil, []byte(`{"default_stream_config":null,"create_stream_on_append":true}`)), 200,
		`{"create_stream_on_append":true,"create_stream_on_read":true}`)
	r = env.do(t, "PUT", "/v1/basins/second-basin", nil, nil)
	expect(t, "ensure existing without a config", r, 200, "")
	if got := r.header.Get("S2-Provision-Result"); got != "updated" {
		t.Errorf("ensure without a config: S2-Provision-Result %q, want updated", got)
	}
	expect(t, "defaults", env.do(t, "GET", "/v1/basins/second-basin", nil, nil), 200,
		`{"create_stream_on_append":false,"create_stream_on_read":false}`)
	r = env.do(t, "PUT", "/v1/basins/second-basin", nil, nil)
	if got := r.header.Get("S2-Provision-Result"); got != "noop" {
		t.Errorf("ensure again: S2-Provision-Result %q, want noop", got)
	}
	expect(t, "reconfigure back", env.do(t, "PATCH", "/v1/basins/second-basin", nil, []byte(`{"create_stream_on_append":true,"create_stream_on_read":true}`)), 200, "")
	expect(t, "ensure new", env.do(t, "PUT", "/v1/basins/third-basin", nil, []byte(`{}`)), 201, "")
	// An invalid default stream config is refused whichever way it comes, not kept for
	// every stream created in the basin to fail with.
	badDefault := `{"default_stream_config":{"retention_policy":{"age":0}}}`
	expect(t, "create with a bad default", env.do(t, "POST", "/v1/basins", nil, []byte(`{"basin":"fourth-basin","config":`+badDefault+`}`)), 422, "")
	expect(t, "ensure with a bad default", env.do(t, "PUT", "/v1/basins/fourth-basin", nil, []byte(`{"config":`+badDefault+`}`)), 422, "")
	expect(t, "reconfigure to a bad default", env.do(t, "PATCH", "/v1/basins/second-basin", nil, []byte(badDefault)), 422, "")
	expect(t, "config unchanged", env.do(t, "GET", "/v1/basins/second-basin", nil, nil), 200,
		`{"create_stream_on_append":true,"create_stream_on_read":true}`)
	r = env.do(t, "GET", "/v1/basins?limit=2", nil, nil)
	expect(t, "list", r, 200, "")
	var l s2api.ListBasinsResponse
	mustJSON(t, r.body, &l)
	if len(l.Basins) != 2 || !l.HasMore || l.Basins[0].Name != "second-basin" {
		t.Errorf("list page %s", r.body)
	}
	r = env.do(t, "GET", "/v1/basins?start_after=second-basin", nil, nil)
	mustJSON(t, r.body, &l)
	if len(l.Basins) != 2 || l.HasMore || l.Basins[0].Name != "test-basin" {
		t.Errorf("list after %s", r.body)
	}
	expect(t, "delete", env.do(t, "DELETE", "/v1/basins/second-basin", nil, nil), 202, "")
	expect(t, "delete again", env.do(t, "DELETE", "/v1/basins/second-basin", nil, nil), 404, "")
	r = env.do(t, "GET", "/v1/basins/second-basin", nil, nil)
	expect(t, "gone", r, 404, "")
	if !strings.Contains(string(r.body), `"basin_not_found"`) {
		t.Errorf("body %s", r.body)
	}
}

func testStreamRoutes(t *testing.T, fac Factory) {
	env := startServer(t, fac)
	cfg := `{"storage_class":"standard","retention_policy":{"infinite":{}},"timestamping":{"mode":"arrival","uncapped":true},"delete_on_empty":{"min_age_secs":60}}`
	r := env.do(t, "POST", "/v1/streams", nil, []byte(`{"stream":"a/b c","config":`+cfg+`}`))
	expect(t, "create", r, 201, "")
	if !hasKeys(r.body, "name", "created_at") {
		t.Errorf("info %s", r.body)
	}
	expect(t, "create again", env.do(t, "POST", "/v1/streams", nil, []byte(`{"stream":"a/b c"}`)), 409, "")
	// A stream created with no config has S2's defaults: retention 7 days.
	expect(t, "create with defaults", env.do(t, "POST", "/v1/streams", nil, []byte(`{"stream":"plain"}`)), 201, "")
	if r := env.do(t, "GET", "/v1/streams/plain", nil, nil); r.status != 200 || !strings.Contains(string(r.body), `"retention_policy":{"age":604800}`) {
		t.Errorf("default config: %d %s, want retention_policy age 604800 (S2's 7 days)", r.status, r.body)
	}
	// Percent-encoded names stay one path segment.
	expect(t, "get config", env.do(t, "GET", "/v1/streams/a%2Fb%20c", nil, nil), 200, cfg)
	expect(t, "reconfigure", env.do(t, "PATCH", "/streams/a%2Fb%20c", nil, []byte(`{"retention_policy":{"age":10},"timestamping":{"mode":"client-prefer"}}`)), 200,
		`{"storage_class":"standard","retention_policy":{"age":10},"timestamping":{"mode":"client-prefer","uncapped":true},"delete_on_empty":{"min_age_secs":60}}`)
	expect(t, "bad reconfigure", env.do(t, "PATCH", "/streams/a%2Fb%20c", nil, []byte(`{"storage_class":"gold"}`)), 422, "")
	for _, c := range []struct {
		body   string
		status int
		result string
	}{
		{`{"retention_policy":{"age":5},"timestamping":{"mode":"arrival"}}`, 201, "created"},
		{`{"retention_policy":{"age":5},"timestamping":{"mode":"arrival"}}`, 200, "noop"},
		// PUT's meaning: what the ensure does not give goes back to its default.
		{`{"retention_policy":{"age":6}}`, 200, "updated"},
		{`{"retention_policy":{"age":6}}`, 200, "noop"},
		{``, 200, "updated"},
		{``, 200, "noop"},
	} {
		r := env.do(t, "PUT", "/v1/streams/x", nil, []byte(c.body))
		expect(t, "ensure "+c.body, r, c.status, "")
		if got := r.header.Get("S2-Provision-Result"); got != c.result {
			t.Errorf("ensure %s: S2-Provision-Result %q, want %q", c.body, got, c.result)
		}
		if c.body == `{"retention_policy":{"age":6}}` {
			got, _ := env.Backend.GetStreamConfig(t.Context(), testBasin, "x")
			if got.RetentionPolicy.AgeSecs != 6 || *got.Timestamping.Mode != s2api.TimestampingClientPrefer {
				t.Errorf("ensure %s gave %s", c.body, mustMarshal(t, got))
			}
		}
	}
	defaults, err := env.Backend.StreamDefaults(t.Context(), testBasin)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := env.Backend.GetStreamConfig(t.Context(), testBasin, "x"); mustMarshal(t, got) != mustMarshal(t, defaults) {
		t.Errorf("ensure without a config gave %s, want the defaults %s", mustMarshal(t, got), mustMarshal(t, defaults))
	}
	// A reconfiguration's null resets a field to its default; an absent field stays.
	expect(t, "reconfigure", env.do(t, "PATCH", "/v1/streams/x", nil, []byte(`{"retention_policy":{"age":9},"timestamping":{"mode":"arrival","uncapped":true}}`)), 200, "")
	r = env.do(t, "PATCH", "/v1/streams/x", nil, []byte(`{"retention_policy":null,"timestamping":{"mode":null}}`))
	expect(t, "reconfigure nulls", r, 200, "")
	var nulled s2api.StreamConfig
	mustJSON(t, r.body, &nulled)
	if mustMarshal(t, nulled.RetentionPolicy) != mustMarshal(t, defaults.RetentionPolicy) || *nulled.Timestamping.Mode != *defaults.Timestamping.Mode || !*nulled.Timestamping.Uncapped {
		t.Errorf("reconfigure with nulls gave %s (defaults %s)", r.body, mustMarshal(t, defaults))
	}
	for _, n := range []string{"x2", "y"} {
		env.createStream(t, n)
	}
	r = env.do(t, "GET", "/v1/streams?prefix=x&limit=1", nil, nil)
	expect(t, "list", r, 200, `{"streams":[{"name":"x","created_at":"`+streamCreated(t, env, "x")+`","deleted_at":null}],"has_more":true}`)
	r = env.do(t, "GET", "/v1/streams?prefix=x&start_after=x", nil, nil)
	var l s2api.ListStreamsResponse
	mustJSON(t, r.body, &l)
	if len(l.Streams) != 1 || l.Streams[0].Name != "x2" || l.HasMore {
		t.Errorf("list after %s", r.body)
	}
	expect(t, "bad limit", env.do(t, "GET", "/v1/streams?limit=-1", nil, nil), 400, "")
	expect(t, "delete", env.do(t, "DELETE", "/v1/streams/a%2Fb%20c", nil, nil), 202, "")
	r = env.do(t, "GET", "/v1/streams/a%2Fb%20c", nil, nil)
	expect(t, "deleted", r, 404, "")
	if !strings.Contains(string(r.body), `"stream_not_found"`) {
		t.Errorf("body %s", r.body)
	}
	expect(t, "no basin header", env.do(t, "GET", "/v1/streams", map[string]string{"S2-Basin": "-"}, nil), 400, "")
	expect(t, "unknown basin", env.do(t, "GET", "/v1/streams", map[string]string{"S2-Basin": "nope-nope"}, nil), 404, "")
	expect(t, "unknown route", env.do(t, "GET", "/v1/nothing", nil, nil), 404, "")
	r = env.do(t, "POST", "/v1/streams/x/records/tail", nil, nil)
	expect(t, "method", r, 405, "")
	if r.header.Get("Allow") != "GET" {
		t.Errorf("Allow %q", r.header.Get("Allow"))
	}
	expect(t, "bad format", env.do(t, "GET", "/v1/streams/x/records", map[string]string{"S2-Format": "hex"}, nil), 400, "")
}

func streamCreated(t *testing.T, env *Env, name string) string {
	l, err := env.Backend.ListStreams(t.Context(), testBasin, s2api.ListRequest{Prefix: name, Limit: 1})
	if err != nil || len(l.Streams) == 0 {
		t.Fatal(err)
	}
	return l.Streams[0].CreatedAt.Format(time.RFC3339Nano)
}

func testAppendAndErrors(t *testing.T, fac Factory) {
	env := startServer(t, fac, server.WithMaxBodyBytes(1<<20))
	env.createStream(t, "s")
	r := env.do(t, "POST", "/v1/streams/s/records", nil, []byte(`{"records":[{"body":"a","headers":[["h","v"]]},{"body":"b","timestamp":5}]}`))
	expect(t, "append", r, 200, "")
	var ack s2api.AppendAck
	mustJSON(t, r.body, &ack)
	if ack.Start.SeqNum != 0 || ack.End.SeqNum != 2 || ack.Tail != ack.End {
		t.Errorf("ack %s", r.body)
	}
	// base64
	b64 := base64.StdEncoding.EncodeToString
	r = env.do(t, "POST", "/v1/streams/s/records", map[string]string{"S2-Format": "base64"},
		[]byte(`{"records":[{"body":"`+b64([]byte{0, 255})+`","headers":[{"name":"`+b64([]byte("n"))+`","value":"`+b64([]byte{1})+`"}]}]}`))
	expect(t, "append base64", r, 200, "")
	// protobuf in, protobuf out
	in := batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("p")}}}
	r = env.do(t, "POST", "/v1/streams/s/records", map[string]string{"Content-Type": "application/protobuf", "Accept": "application/protobuf"}, s2api.AppendAppendInputProto(nil, &in))
	if r.status != 200 || r.header.Get("Content-Type") != "application/protobuf" {
		t.Fatalf("proto append: %d %s", r.status, r.body)
	}
	pack, err := s2api.DecodeAppendAckProto(r.body)
	if err != nil || pack.Start.SeqNum != 3 || pack.End.SeqNum != 4 {
		t.Fatalf("proto ack %+v %v", pack, err)
	}
	stored, err := env.Backend.Read(t.Context(), testBasin, "s", s2api.ReadStart{SeqNum: ptr(uint64(2))})
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := stored.Next(t.Context(), server.ReadLimit{Records: 1, Bytes: 1 << 20}, false)
	if !bytes.Equal(rb.Records[0].Body, []byte{0, 255}) || !bytes.Equal(rb.Records[0].Headers[0].Value, []byte{1}) {
		t.Errorf("base64 record stored as %+v", rb.Records[0])
	}

	expect(t, "seq_num mismatch", env.do(t, "POST", "/v1/streams/s/records", nil, []byte(`{"records":[{"body":"x"}],"match_seq_num":1}`)), 412, `{"seq_num_mismatch":4}`)
	expect(t, "fence", env.do(t, "POST", "/v1/streams/s/records", nil, []byte(`{"records":[{"headers":[["","fence"]],"body":"tok"}]}`)), 200, "")
	expect(t, "fencing mismatch", env.do(t, "POST", "/v1/streams/s/records", nil, []byte(`{"records":[{"body":"x"}],"fencing_token":"no"}`)), 412, `{"fencing_token_mismatch":"tok"}`)
	expect(t, "fenced ok", env.do(t, "POST", "/v1/streams/s/records", nil, []byte(`{"records":[{"body":"x"}],"fencing_token":"tok","match_seq_num":5}`)), 200, "")
	expect(t, "empty", env.do(t, "POST", "/v1/streams/s/records", nil, []byte(`{"records":[]}`)), 422, "")
	expect(t, "bad command", env.do(t, "POST", "/v1/streams/s/records", nil, []byte(`{"records":[{"headers":[["","explode"]]}]}`)), 422, "")
	expect(t, "long token", env.do(t, "POST", "/v1/streams/s/records", nil, []byte(`{"records":[{"body":"x"}],"fencing_token":"`+strings.Repeat("t", 49)+`"}`)), 422, "")
	expect(t, "bad json", env.do(t, "POST", "/v1/streams/s/records", nil, []byte(`{"records":[{"body":1}]}`)), 400, "")
	expect(t, "bad proto", env.do(t, "POST", "/v1/streams/s/records", map[string]string{"Content-Type": "application/protobuf"}, []byte{0x0a, 0x05}), 400, "")
	expect(t, "too large", env.do(t, "POST", "/v1/streams/s/records", nil, bytes.Repeat([]byte(" "), 1<<20+1)), 413, "")
	r = env.do(t, "POST", "/v1/streams/missing/records", nil, []byte(`{"records":[{"body":"x"}]}`))
	expect(t, "missing stream", r, 404, "")
	if !strings.Contains(string(r.body), "stream_not_found") {
		t.Errorf("body %s", r.body)
	}
	expect(t, "tail", env.do(t, "GET", "/v1/streams/s/records/tail", nil, nil), 200, "")
}

func ptr[T any](v T) *T { return &v }

func testAutoCreate(t *testing.T, fac Factory) {
	env := startServer(t, fac)
	expect(t, "no auto create", env.do(t, "POST", "/v1/streams/auto/records", nil, []byte(`{"records":[{"body":"x"}]}`)), 404, "")
	if _, err := env.Backend.ReconfigureBasin(t.Context(), testBasin, s2api.BasinReconfiguration{CreateStreamOnAppend: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	expect(t, "read does not create", env.do(t, "GET", "/v1/streams/auto/records", nil, nil), 404, "")
	r := env.do(t, "POST", "/v1/streams/auto/records", map[string]string{"S2-Stream-Config": `{"retention_policy":{"age":99}}`}, []byte(`{"records":[{"body":"x"}]}`))
	expect(t, "create on append", r, 200, "")
	cfg, err := env.Backend.GetStreamConfig(t.Context(), testBasin, "auto")
	if err != nil || cfg.RetentionPolicy.AgeSecs != 99 {
		t.Errorf("auto-created config %+v %v", cfg, err)
	}
	if _, err := env.Backend.ReconfigureBasin(t.Context(), testBasin, s2api.BasinReconfiguration{CreateStreamOnRead: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	expect(t, "create on read", env.do(t, "GET", "/v1/streams/auto2/records", nil, nil), 200, `{"records":[],"tail":{"seq_num":0,"timestamp":0}}`)
}

func testUnaryRead(t *testing.T, fac Factory) {
	env := startServer(t, fac)
	env.createStream(t, "s")
	in := batchfmt.AppendInput{}
	for i := 0; i < 10; i++ {
		in.Records = append(in.Records, batchfmt.Record{Body: []byte{'a' + byte(i)}, Timestamp: uint64(100 + 10*i), HasTimestamp: true})
	}
	if _, err := env.Backend.Append(t.Context(), testBasin, "s", in); err != nil {
		t.Fatal(err)
	}
	seqs := func(path string, hdr map[string]string) []uint64 {
		t.Helper()
		r := env.do(t, "GET", path, hdr, nil)
		expect(t, path, r, 200, "")
		rb, err := s2api.DecodeReadBatchJSON(r.body, s2api.FormatRaw)
		if err != nil {
			t.Fatal(err)
		}
		if rb.Tail == nil || rb.Tail.SeqNum < 10 {
			t.Errorf("%s: tail %+v", path, rb.Tail)
		}
		var out []uint64
		for _, rec := range rb.Records {
			out = append(out, rec.SeqNum)
		}
		return out
	}
	check := func(path string, want ...uint64) {
		t.Helper()
		got := seqs("/v1/streams/s/records?"+path, nil)
		if len(got) != len(want) || (len(want) > 0 && (got[0] != want[0] || got[len(got)-1] != want[len(want)-1])) {
			t.Errorf("%s: got %v, want %v", path, got, want)
		}
	}
	check("seq_num=0", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	check("seq_num=3&count=2", 3, 4)
	check("timestamp=125&count=1", 3)
	check("tail_offset=2", 8, 9)
	check("")
	check("seq_num=0&until=130", 0, 1, 2)
	check("seq_num=0&bytes=18", 0, 1) // 9 bytes each
	check("seq_num=0&bytes=17", 0)
	check("seq_num=0&bytes=5")
	check("seq_num=10")
	check("seq_num=11&clamp=true")
	r := env.do(t, "GET", "/v1/streams/s/records?seq_num=11", nil, nil)
	expect(t, "416", r, 416, `{"tail":{"seq_num":10,"timestamp":190}}`)
	// 400 bad_query, not 422: S2's read lists no 422 among its errors (the SDK's ReadErrors).
	expect(t, "two starts", env.do(t, "GET", "/v1/streams/s/records?seq_num=1&tail_offset=1", nil, nil), 400, "")
	expect(t, "wait over 60", env.do(t, "GET", "/v1/streams/s/records?wait=61", nil, nil), 400, "")
	expect(t, "bad query", env.do(t, "GET", "/v1/streams/s/records?count=many", nil, nil), 400, "")
	// protobuf
	r = env.do(t, "GET", "/v1/streams/s/records?seq_num=9", map[string]string{"Accept": "application/protobuf"}, nil)
	rb, err := s2api.DecodeReadBatchProto(r.body)
	if r.status != 200 || err != nil || len(rb.Records) != 1 || string(rb.Records[0].Body) != "j" || rb.Tail.SeqNum != 10 {
		t.Errorf("proto read %d %+v %v", r.status, rb, err)
	}
	// base64
	r = env.do(t, "GET", "/v1/streams/s/records?seq_num=9", map[string]string{"S2-Format": "base64"}, nil)
	if !strings.Contains(string(r.body), `"body":"ag=="`) {
		t.Errorf("base64 read %s", r.body)
	}
	// Long poll: the read waits for the record appended while it waits (or finds it at once).
	var wg sync.WaitGroup
	wg.Add(1)
	var got []uint64
	go func() {
		defer wg.Done()
		got = seqs("/v1/streams/s/records?seq_num=10&wait=20", nil)
	}()
	time.Sleep(20 * time.Millisecond) // not needed for correctness: either order gives one record
	env.appendN(t, "s", 1)
	wg.Wait()
	if len(got) != 1 || got[0] != 10 {
		t.Errorf("long poll got %v", got)
	}
}

// testTrimAndTimestamping checks the stream semantics the API exposes: a trim command hides
// the records before its seq_num, and the timestamping modes.
func testTrimAndTimestamping(t *testing.T, fac Factory) {
	env := startServer(t, fac)
	env.createStream(t, "s")
	env.appendN(t, "s", 5)
	trim := base64.StdEncoding.EncodeToString([]byte{0, 0, 0, 0, 0, 0, 0, 3})
	r := env.do(t, "POST", "/v1/streams/s/records", map[string]string{"S2-Format": "base64"},
		[]byte(`{"records":[{"headers":[["","`+base64.StdEncoding.EncodeToString([]byte("trim"))+`"]],"body":"`+trim+`"}]}`))
	expect(t, "trim", r, 200, "")
	r = env.do(t, "GET", "/v1/streams/s/records?seq_num=0", nil, nil)
	expect(t, "read after trim", r, 200, "")
	rb, err := s2api.DecodeReadBatchJSON(r.body, s2api.FormatRaw)
	if err != nil || len(rb.Records) != 3 || rb.Records[0].SeqNum != 3 || rb.Records[2].SeqNum != 5 {
		t.Fatalf("after trim to 3: %s", r.body)
	}

	mk := func(name, cfg string) {
		t.Helper()
		expect(t, "create "+name, env.do(t, "POST", "/v1/streams", nil, []byte(`{"stream":"`+name+`","config":`+cfg+`}`)), 201, "")
	}
	mk("require", `{"timestamping":{"mode":"client-require"}}`)
	expect(t, "client-require without timestamp", env.do(t, "POST", "/v1/streams/require/records", nil, []byte(`{"records":[{"body":"x"}]}`)), 422, "")
	r = env.do(t, "POST", "/v1/streams/require/records", nil, []byte(`{"records":[{"body":"x","timestamp":1000},{"body":"y","timestamp":900}]}`))
	expect(t, "client-require", r, 200, "")
	var ack s2api.AppendAck
	mustJSON(t, r.body, &ack)
	if ack.Start.Timestamp != 1000 || ack.End.Timestamp != 1000 {
		t.Errorf("timestamps must not decrease: %s", r.body)
	}
	mk("arrival", `{"timestamping":{"mode":"arrival"}}`)
	before := uint64(time.Now().UnixMilli())
	r = env.do(t, "POST", "/v1/streams/arrival/records", nil, []byte(`{"records":[{"body":"x","timestamp":5}]}`))
	mustJSON(t, r.body, &ack)
	if ack.Start.Timestamp < before {
		t.Errorf("arrival mode kept the client timestamp: %s", r.body)
	}
	mk("capped", `{"timestamping":{"mode":"client-prefer","uncapped":false}}`)
	future := uint64(time.Now().Add(time.Hour).UnixMilli())
	r = env.do(t, "POST", "/v1/streams/capped/records", nil, []byte(fmt.Sprintf(`{"records":[{"body":"x","timestamp":%d}]}`, future)))
	mustJSON(t, r.body, &ack)
	if ack.Start.Timestamp >= future {
		t.Errorf("a future timestamp was not capped: %s", r.body)
	}
	mk("uncapped", `{"timestamping":{"uncapped":true}}`)
	r = env.do(t, "POST", "/v1/streams/uncapped/records", nil, []byte(fmt.Sprintf(`{"records":[{"body":"x","timestamp":%d}]}`, future)))
	mustJSON(t, r.body, &ack)
	if ack.Start.Timestamp != future {
		t.Errorf("uncapped: %s", r.body)
	}
}

// testRequestToken checks that a create retried with the same S2-Request-Token gets the first
// answer, not a 409.
func testRequestToken(t *testing.T, fac Factory) {
	env := startServer(t, fac)
	hdr := map[string]string{"S2-Request-Token": "tok-1"}
	first := env.do(t, "POST", "/v1/streams", hdr, []byte(`{"stream":"idem"}`))
	expect(t, "create", first, 201, "")
	again := env.do(t, "POST", "/v1/streams", hdr, []byte(`{"stream":"idem"}`))
	expect(t, "retry", again, 201, string(first.body))
	expect(t, "same token, other request", env.do(t, "POST", "/v1/streams", hdr, []byte(`{"stream":"idem","config":{}}`)), 409, "")
	expect(t, "no token", env.do(t, "POST", "/v1/streams", nil, []byte(`{"stream":"idem"}`)), 409, "")
	b1 := env.do(t, "POST", "/v1/basins", hdr, []byte(`{"basin":"idem-basin"}`))
	expect(t, "create basin", b1, 201, "")
	expect(t, "retry basin", env.do(t, "POST", "/v1/basins", hdr, []byte(`{"basin":"idem-basin"}`)), 201, string(b1.body))
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
