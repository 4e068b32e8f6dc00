package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A JSON body with a field of the wrong kind is answered 400 bad_json with a message in the
// request's terms (which field, what it must be), for every field of every body; never Go's
// type names.
func TestJSONErrorsSayWhatIsWrongInTheRequest(t *testing.T) {
	srv := newEngineServer(t)
	for _, c := range []struct{ method, path, body, want string }{
		{"POST", "/v1/streams/s/records", `{"records":"x"}`, "append body: records must be an array, not a string"},
		{"POST", "/v1/streams/s/records", `{"records":{}}`, "append body: records must be an array, not an object"},
		{"POST", "/v1/streams/s/records", `{"records":["x"]}`, "append body: records must be an object, not a string"},
		{"POST", "/v1/streams/s/records", `{"records":[{"timestamp":"5"}]}`, "append body: records.timestamp must be an integer from 0 to 18446744073709551615, not a string"},
		{"POST", "/v1/streams/s/records", `{"records":[{"timestamp":-1}]}`, "append body: records.timestamp must be an integer from 0 to 18446744073709551615, not -1"},
		{"POST", "/v1/streams/s/records", `{"records":[{"body":5}]}`, "append body: records.body must be a string, not a number"},
		{"POST", "/v1/streams/s/records", `{"records":[{"headers":"h"}]}`, "append body: records.headers must be an array, not a string"},
		{"POST", "/v1/streams/s/records", `{"records":[{"headers":[[1,2]]}]}`, "must be a string, not a number"},
		{"POST", "/v1/streams/s/records", `{"records":[{"headers":[{"name":1,"value":"v"}]}]}`, "append body: records.headers.name must be a string, not a number"},
		{"POST", "/v1/streams/s/records", `{"records":[{"headers":[["a"]]}]}`, "a header pair must hold exactly 2 strings, found 1"},
		{"POST", "/v1/streams/s/records", `{"records":[],"match_seq_num":true}`, "append body: match_seq_num must be an integer from 0 to 18446744073709551615, not true or false"},
		{"POST", "/v1/streams/s/records", `{"records":[],"fencing_token":[]}`, "append body: fencing_token must be a string, not an array"},
		{"POST", "/v1/streams/s/records", `[]`, "append body: the body must be an object, not an array"},
		{"POST", "/v1/streams/s/records", `{"records":[`, "append body: not valid JSON: it ends early"},
		{"POST", "/v1/streams/s/records", `{"records":[}`, "append body: not valid JSON at byte 13: invalid character '}'"},
		{"POST", "/v1/basins", `{"basin":5}`, "request body: basin must be a string, not a number"},
		{"POST", "/v1/basins", `{"basin":"json-errors","config":{"create_stream_on_append":"yes"}}`, "request body: config.create_stream_on_append must be true or false, not a string"},
		{"POST", "/v1/basins", `{"basin":"json-errors","config":{"default_stream_config":[]}}`, "request body: config.default_stream_config must be an object, not an array"},
		{"POST", "/v1/streams", `{"stream":["s"]}`, "request body: stream must be a string, not an array"},
		{"POST", "/v1/streams", `{"stream":"t","config":{"storage_class":1}}`, "request body: config.storage_class must be a string, not a number"},
		{"POST", "/v1/streams", `{"stream":"t","config":{"retention_policy":{"age":"1d"}}}`, "request body: config.retention_policy.age must be an integer from 0 to 18446744073709551615, not a string"},
		{"POST", "/v1/streams", `{"stream":"t","config":{"retention_policy":5}}`, "request body: config.retention_policy must be an object, not a number"},
		{"POST", "/v1/streams", `{"stream":"t","config":{"retention_policy":{"age":1,"infinite":{}}}}`, "retention_policy must have exactly one of age and infinite"},
		{"POST", "/v1/streams", `{"stream":"t","config":{"timestamping":{"mode":true}}}`, "request body: config.timestamping.mode must be a string, not true or false"},
		{"POST", "/v1/streams", `{"stream":"t","config":{"timestamping":{"uncapped":1}}}`, "request body: config.timestamping.uncapped must be true or false, not a number"},
		{"POST", "/v1/streams", `{"stream":"t","config":{"delete_on_empty":{"min_age_secs":1.5}}}`, "request body: config.delete_on_empty.min_age_secs must be an integer from 0 to 18446744073709551615, not 1.5"},
		{"PATCH", "/v1/streams/s", `{"timestamping":"arrival"}`, "stream config: timestamping must be an object, not a string"},
		{"PUT", "/v1/streams/s", `{"stream":"s","config":"x"}`, "stream body: config must be an object, not a string"},
		{"PUT", "/v1/streams/s", `{"storage_class":["x"]}`, "stream config: storage_class must be a string, not an array"},
		{"PATCH", "/v1/basins/" + fuzzBasin, `{"create_stream_on_read":0}`, "basin reconfiguration: create_stream_on_read must be true or false, not a number"},
		{"PUT", "/v1/basins/" + fuzzBasin, `{"config":{"create_stream_on_read":"no"}}`, "request body: config.create_stream_on_read must be true or false, not a string"},
	} {
		rec := serve(srv, c.method, c.path, c.body, nil)
		var info struct{ Code, Message string }
		_ = json.Unmarshal(rec.Body.Bytes(), &info)
		if rec.Code != 400 || info.Code != "bad_json" || !strings.Contains(info.Message, c.want) {
			t.Errorf("%s %s %s: %d %s, want 400 bad_json with %q", c.method, c.path, c.body, rec.Code, rec.Body.String(), c.want)
			continue
		}
		for _, internal := range []string{"Go ", "struct", "s2api.", "unmarshal", "json:"} {
			if strings.Contains(info.Message, internal) {
				t.Errorf("%s %s %s: message %q shows Go internals (%q)", c.method, c.path, c.body, info.Message, internal)
			}
		}
	}
}
