package main

import (
	"strings"
	"testing"
)

// TestStoreURLSecretQueryNotEchoed: README ("Security"): "credentials put in a store URL
// are refused without being echoed". Query parameters named like secrets are redacted in the
// CLI's "--store URL:" prefix and in the objectstore error that follows it alike
// (storeurl.Redact); the error once quoted the raw URL.
func TestStoreURLSecretQueryNotEchoed(t *testing.T) {
	const secret = "query-secret-never-echo-me"
	dir := t.TempDir()
	for _, args := range [][]string{
		{"stream", "list"},
		{"serve", "--listen", "127.0.0.1:0"},
	} {
		r := sluice(t, dir, "", nil, append(args, "--store", "s3://bucket/p?region=us-east-1&secret_key="+secret)...)
		if r.code == 0 {
			t.Errorf("%v: a store URL with secret_key was accepted", args)
			continue
		}
		if strings.Contains(r.stderr, secret) {
			t.Errorf("%v: the secret in the store URL was echoed:\n%s", args, r.stderr)
		}
	}
}
