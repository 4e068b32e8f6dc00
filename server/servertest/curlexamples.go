package servertest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/s2api"
)

// docCurls are the curl examples of S2's documentation (its records and streams pages),
// verbatim but for the host. They are split into argv like a shell would (quotes, ${VAR}) and
// run with curl when it is installed; the URLs with an unquoted "&" are kept whole, as the
// documentation means them.
var docCurls = []struct {
	name   string
	cmd    string
	status int
	check  func(t *testing.T, body []byte)
}{
	{"streams page: create stream (PUT)", `curl -X PUT https://api.s2.dev/streams/my-stream \
  -H "S2-Basin: my-basin" \
  -H "Authorization: Bearer ${S2_ACCESS_TOKEN}" \
  -H "Content-Type: application/json" \
  -d '{
    "stream": "my-stream",
    "config": {
      "retention_policy": {"age": 604800}
    }
  }'`, 201, func(t *testing.T, b []byte) {
		var info s2api.StreamInfo
		mustJSON(t, b, &info)
		if info.Name != "my-stream" || info.CreatedAt.IsZero() {
			t.Errorf("stream info %s", b)
		}
	}},
	{"records page: append", `curl -X POST https://api.s2.dev/streams/my-stream/records \
    -H "S2-Basin: my-basin" \
    -H "Content-Type: application/json" \
    -d '{
      "records": [
        {
          "timestamp": 1709481600000,
          "headers": [
            {"name": "event-type", "value": "order.created"}
          ],
          "body": "eyJvcmRlcl9pZCI6MTIzfQ=="
        }
      ]
    }'`, 200, func(t *testing.T, b []byte) {
		// 100 records were there before (see the test), so the append gets seq_num 100.
		var ack s2api.AppendAck
		mustJSON(t, b, &ack)
		if ack.Start.SeqNum != 100 || ack.End.SeqNum != 101 || ack.Tail.SeqNum != 101 || ack.Start.Timestamp != 1709481600000 {
			t.Errorf("ack %s", b)
		}
		if !hasKeys(b, "start", "end", "tail") {
			t.Errorf("ack keys %s", b)
		}
	}},
	{"records page: read", `curl https://api.s2.dev/streams/my-stream/records?seq_num=100&count=10 \
    -H "S2-Basin: my-basin"`, 200, func(t *testing.T, b []byte) {
		want := `{"records":[{"seq_num":100,"timestamp":1709481600000,"headers":[["event-type","order.created"]],"body":"eyJvcmRlcl9pZCI6MTIzfQ=="}],"tail":{"seq_num":101,"timestamp":1709481600000}}`
		if !jsonEqual(b, []byte(want)) {
			t.Errorf("read\n got %s\nwant %s", b, want)
		}
	}},
	{"records page: read base64", `curl https://api.s2.dev/streams/my-stream/records \
  -H "S2-Basin: my-basin" \
  -H "S2-Format: base64"`, 200, func(t *testing.T, b []byte) {
		// No start: tail_offset=0, so nothing, and the tail.
		if !jsonEqual(b, []byte(`{"records":[],"tail":{"seq_num":101,"timestamp":1709481600000}}`)) {
			t.Errorf("read %s", b)
		}
	}},
	{"streams page: list streams", `curl https://api.s2.dev/streams?prefix=device- \
-H "S2-Basin: my-basin" \
-H "Authorization: Bearer ${S2_ACCESS_TOKEN}"`, 200, func(t *testing.T, b []byte) {
		var l s2api.ListStreamsResponse
		mustJSON(t, b, &l)
		if len(l.Streams) != 2 || l.Streams[0].Name != "device-001" || l.Streams[1].Name != "device-002" || l.HasMore {
			t.Errorf("list %s", b)
		}
		if !hasKeys(b, "streams", "has_more") {
			t.Errorf("keys %s", b)
		}
	}},
	{"streams page: check tail", `curl https://api.s2.dev/streams/my-stream/tail \
-H "S2-Basin: my-basin" \
-H "Authorization: Bearer ${S2_ACCESS_TOKEN}"`, 200, func(t *testing.T, b []byte) {
		if !jsonEqual(b, []byte(`{"tail":{"seq_num":101,"timestamp":1709481600000}}`)) {
			t.Errorf("tail %s", b)
		}
	}},
	{"streams page: delete stream", `curl -X DELETE https://api.s2.dev/streams/my-stream \
-H "S2-Basin: my-basin" \
-H "Authorization: Bearer ${S2_ACCESS_TOKEN}"`, 202, nil},
}

func hasKeys(b []byte, keys ...string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// shellWords splits a command like sh would for these examples: backslash-newline joins
// lines, single and double quotes group, ${VAR} expands from env (outside single quotes).
func shellWords(cmd string, env map[string]string) ([]string, error) {
	cmd = strings.ReplaceAll(cmd, "\\\n", " ")
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(cmd[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(cmd[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			j := strings.IndexByte(cmd[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unterminated double quote")
			}
			cur.WriteString(expandVars(cmd[i+1:i+1+j], env))
			i += j + 1
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func expandVars(s string, env map[string]string) string {
	for k, v := range env {
		s = strings.ReplaceAll(s, "${"+k+"}", v)
	}
	return s
}

func testDocCurlExamples(t *testing.T, fac Factory) {
	// No token on the server: the records page's lines send none, and the streams page's header is
	// then ignored, so every line runs exactly as written.
	const token = "doc-token"
	env := startServer(t, fac)
	if _, err := env.Backend.CreateBasin(t.Context(), "my-basin", s2api.BasinConfig{}); err != nil {
		t.Fatal(err)
	}
	curl, curlErr := exec.LookPath("curl")
	if os.Getenv("SLUICE_TEST_NO_CURL") != "" {
		curlErr = fmt.Errorf("SLUICE_TEST_NO_CURL is set")
	}
	for i, c := range docCurls {
		if i == 1 {
			// Fill seq_nums 0..99 so that the documentation's read of seq_num=100 finds the appended record.
			env.appendNIn(t, "my-basin", "my-stream", 100)
			for _, s := range []string{"device-001", "device-002", "other"} {
				if _, err := env.Backend.CreateStream(t.Context(), "my-basin", s, s2api.StreamConfig{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		args, err := shellWords(c.cmd, map[string]string{"S2_ACCESS_TOKEN": token})
		if err != nil {
			t.Fatal(err)
		}
		for j, a := range args {
			args[j] = strings.Replace(a, "https://api.s2.dev", env.URL, 1)
		}
		if args[0] != "curl" {
			t.Fatalf("%s: not a curl line", c.name)
		}
		var status int
		var body []byte
		if curlErr == nil {
			status, body = runCurl(t, curl, args[1:])
		} else {
			status, body = replayCurl(t, env, args[1:])
		}
		if status != c.status {
			t.Fatalf("%s: status %d, want %d; body %s", c.name, status, c.status, body)
		}
		if c.check != nil {
			c.check(t, body)
		}
	}
	cfg, err := env.Backend.GetStreamConfig(t.Context(), "my-basin", "device-001")
	if err != nil || cfg.RetentionPolicy == nil {
		t.Fatalf("config: %+v %v", cfg, err)
	}
	if _, err := env.Backend.CheckTail(t.Context(), "my-basin", "my-stream"); err == nil {
		t.Error("my-stream still exists after the documentation's DELETE")
	}
	if curlErr != nil {
		t.Logf("curl not installed: replayed the documentation's lines with net/http")
	}
}

// runCurl runs curl with a documentation line's arguments plus -sS and a status trailer.
func runCurl(t *testing.T, curl string, args []string) (int, []byte) {
	t.Helper()
	full := append([]string{"-sS", "-w", "\n%{http_code}"}, args...)
	out, err := exec.CommandContext(t.Context(), curl, full...).Output()
	if err != nil {
		t.Fatalf("curl %q: %v", args, err)
	}
	i := strings.LastIndexByte(string(out), '\n')
	var status int
	fmt.Sscanf(string(out[i+1:]), "%d", &status)
	return status, out[:i]
}

// replayCurl does what curl would for the flags the documentation's lines use (-X, -H, -d).
func replayCurl(t *testing.T, env *Env, args []string) (int, []byte) {
	t.Helper()
	method, url := "", ""
	hdr := map[string]string{"S2-Basin": "-"}
	var body []byte
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-X":
			i++
			method = args[i]
		case "-H":
			i++
			k, v, _ := strings.Cut(args[i], ":")
			hdr[k] = strings.TrimSpace(v)
		case "-d":
			i++
			body = []byte(args[i])
			if method == "" {
				method = "POST"
			}
			if _, ok := hdr["Content-Type"]; !ok {
				hdr["Content-Type"] = "application/x-www-form-urlencoded"
			}
		default:
			url = args[i]
		}
	}
	if method == "" {
		method = "GET"
	}
	r := env.do(t, method, strings.TrimPrefix(url, env.URL), hdr, body)
	return r.status, r.body
}
