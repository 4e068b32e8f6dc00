package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseLine: append's line decoder never panics, and what it accepts survives the trip
// through read's base64 JSON form and back unchanged.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"", "plain", "a\rb", `{"body":"x"}`, `{"headers":[["n","v"]],"body":"b","timestamp":5}`,
		`{"headers":[["n"]],"body":""}`, `{"seq_num":3,"body":"x"}`, `{"body":"x"} trailing`,
		"aGVsbG8=", "!!", `{"headers":[["bg==","dg=="]],"body":"Yg=="}`, `{"bdy":1}`,
	} {
		for _, format := range []string{"raw", "json", "base64"} {
			f.Add(format, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, format string, line []byte) {
		rec, err := parseLine(format, line)
		if err != nil {
			return
		}
		if format == "raw" && !bytes.Equal(rec.Body, line) {
			t.Fatalf("raw body %q, want %q", rec.Body, line)
		}
		out, err := json.Marshal(encodeRecord(7, rec.Timestamp, rec, true))
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseLine("base64", out)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", out, err)
		}
		if !bytes.Equal(back.Body, rec.Body) || len(back.Headers) != len(rec.Headers) {
			t.Fatalf("round trip %+v -> %s -> %+v", rec, out, back)
		}
		for i := range rec.Headers {
			if !bytes.Equal(back.Headers[i].Name, rec.Headers[i].Name) || !bytes.Equal(back.Headers[i].Value, rec.Headers[i].Value) {
				t.Fatalf("header %d: %+v -> %+v", i, rec.Headers[i], back.Headers[i])
			}
		}
	})
}
