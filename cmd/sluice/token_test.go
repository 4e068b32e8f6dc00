package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTokenCommandsIssueListAndRevoke drives sluice token against a daemon with a root token:
// the root issues a scoped token, the scoped token appends where it may and is refused
// elsewhere, listing shows no secret, and a revoked token is refused.
func TestTokenCommandsIssueListAndRevoke(t *testing.T) {
	dir := t.TempDir()
	const root = "root-token-cli-test"
	base := startServe(t, dir, []string{"SLUICE_AUTH_TOKEN=" + root})
	rootCall := apiCaller(t, base, "tokens-basin", root)
	if code, body := rootCall("POST", "/v1/basins", `{"basin":"tokens-basin"}`); code != 201 {
		t.Fatalf("create basin: %d %s", code, body)
	}
	env := []string{"SLUICE_ENDPOINT=" + base, "SLUICE_TOKEN=" + root}

	r := sluice(t, dir, "", env, "token", "issue", "svc/orders", "--basins", "exact:tokens-basin",
		"--streams", "prefix:orders/", "--ops", "append,create-stream")
	if r.code != 0 {
		t.Fatalf("issue: exit %d stderr %s", r.code, r.stderr)
	}
	var issued struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &issued); err != nil || issued.AccessToken == "" {
		t.Fatalf("issue printed %q: %v", r.stdout, err)
	}
	svc := apiCaller(t, base, "tokens-basin", issued.AccessToken)
	if code, body := svc("POST", "/v1/streams", `{"stream":"orders/eu"}`); code != 201 {
		t.Fatalf("scoped create: %d %s", code, body)
	}
	if code, body := svc("POST", "/v1/streams/orders%2Feu/records", `{"records":[{"body":"x"}]}`); code != 200 {
		t.Fatalf("scoped append: %d %s", code, body)
	}
	if code, body := svc("POST", "/v1/streams", `{"stream":"billing"}`); code != 403 {
		t.Fatalf("create outside the prefix: %d %s", code, body)
	}

	r = sluice(t, dir, "", env, "token", "list")
	if r.code != 0 || !strings.Contains(r.stdout, `"id":"svc/orders"`) || !strings.Contains(r.stdout, `"prefix":"orders/"`) {
		t.Fatalf("list: exit %d stdout %s stderr %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, issued.AccessToken[strings.LastIndexByte(issued.AccessToken, '.')+1:]) {
		t.Errorf("list shows the secret: %s", r.stdout)
	}
	// The scoped token may not manage tokens: exit 1 with the daemon's refusal.
	r = sluice(t, dir, "", []string{"SLUICE_ENDPOINT=" + base, "SLUICE_TOKEN=" + issued.AccessToken}, "token", "list")
	if r.code != 1 || !strings.Contains(r.stderr, "permission_denied") {
		t.Errorf("list with the scoped token: exit %d stderr %s", r.code, r.stderr)
	}
	r = sluice(t, dir, "", env, "token", "issue", "bad", "--basins", "all")
	if r.code != 1 || !strings.Contains(r.stderr, "--basins") {
		t.Errorf("bad set: exit %d stderr %s", r.code, r.stderr)
	}

	r = sluice(t, dir, "", env, "token", "revoke", "svc/orders")
	if r.code != 0 {
		t.Fatalf("revoke: exit %d stderr %s", r.code, r.stderr)
	}
	if code, body := svc("POST", "/v1/streams/orders%2Feu/records", `{"records":[{"body":"y"}]}`); code != 401 {
		t.Fatalf("append after revoke: %d %s", code, body)
	}
}
