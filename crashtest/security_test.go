package crashtest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/engine"
	"github.com/sluice-dev/sluice/internal/testseed"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/stream"
)

// Security checks: constant-time bearer tokens, TLS, request size limits, names that stay in
// their place, and no secrets in logs.

// TestBearerTokenComparedInConstantTime reads package server's source: the token is compared
// with crypto/subtle.ConstantTimeCompare, and nowhere with == or != (which return early on
// the first differing byte). Then it checks the behaviour.
func TestBearerTokenComparedInConstantTime(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("../server/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("server sources: %v", err)
	}
	subtleCalls := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ConstantTimeCompare" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "subtle" && mentionsToken(x) {
						subtleCalls++
					}
				}
			case *ast.BinaryExpr:
				if (x.Op == token.EQL || x.Op == token.NEQ) && (mentionsTokenExpr(x.X) || mentionsTokenExpr(x.Y)) {
					// Comparing the token with "" (is it set?) leaks nothing.
					if !isEmptyString(x.X) && !isEmptyString(x.Y) {
						t.Errorf("%s: the token is compared with %s", fset.Position(x.Pos()), x.Op)
					}
				}
			}
			return true
		})
	}
	if subtleCalls == 0 {
		t.Error("package server never compares the token with subtle.ConstantTimeCompare")
	}

	ecfg := engine.DefaultConfig()
	ecfg.Store = objectstore.NewMemStore()
	eng, err := engine.New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	srv, err := server.New(eng.S2(), server.WithBearerToken("s3cr3t-token"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, c := range []struct {
		auth string
		want int
	}{
		{"", 401}, {"Bearer", 401}, {"Bearer ", 401}, {"Bearer s3cr3t", 401}, {"Bearer s3cr3t-token-more", 401},
		{"Basic s3cr3t-token", 401}, {"Bearer S3CR3T-TOKEN", 401}, {"Bearer s3cr3t-token", 200}, {"bearer s3cr3t-token", 200},
	} {
		req := httptest.NewRequest("GET", "/v1/basins", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("Authorization %q: %d, want %d", c.auth, rec.Code, c.want)
		}
		if rec.Code == 401 && !strings.Contains(rec.Body.String(), `"authn"`) {
			t.Errorf("Authorization %q: body %s", c.auth, rec.Body.String())
		}
	}
}

func mentionsTokenExpr(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ConstantTimeCompare" {
				return false // compared in constant time: what the result is compared with is fine
			}
		}
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "token" {
			found = true
		}
		return !found
	})
	return found
}

func mentionsToken(c *ast.CallExpr) bool {
	for _, a := range c.Args {
		if mentionsTokenExpr(a) {
			return true
		}
	}
	return false
}

func isEmptyString(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	return ok && lit.Kind == token.STRING && (lit.Value == `""` || lit.Value == "``")
}

// TestNamesStayInTheirPlace is a property test over stream.Locate: for random stream names
// (any bytes, with '/', '.', '%', "..", NUL, non-UTF-8) and basins, every key is a valid key
// under its own root, the encoded name is one path segment without '.', decodes back to the
// name, and no two distinct (basin, name) pairs have roots where one is a prefix of the other.
func TestNamesStayInTheirPlace(t *testing.T) {
	seed := testseed.Get(t)
	r := mrand.New(mrand.NewPCG(seed, 7))
	alphabet := []string{"a", "b", "/", ".", "..", "%", "%2F", "%25", "-", "_", "\x00", "\xff", "é", " ", "data", "manifest", "streams", "basins"}
	basins := []string{"", "basin-one", "basin-two", "basin-one-x"}
	type loc struct{ basin, name, root string }
	seen := map[string]loc{}
	var all []loc
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		name, basin := b.String(), basins[r.IntN(len(basins))]
		st, err := stream.Locate(basin, name)
		if err != nil {
			t.Fatalf("Locate(%q, %q): %v", basin, name, err)
		}
		root := strings.TrimSuffix(st.ManifestKey(), "/manifest")
		wantRoot := "streams/"
		if basin != "" {
			wantRoot = "basins/" + basin + "/streams/"
		}
		enc := strings.TrimPrefix(root, wantRoot)
		switch {
		case !strings.HasPrefix(root, wantRoot) || st.DataPrefix() != root+"/data":
			t.Fatalf("%q in %q: manifest %q, data %q outside %q", name, basin, st.ManifestKey(), st.DataPrefix(), wantRoot)
		case enc == "" || strings.Contains(enc, ".") || slices.Contains(strings.Split(enc, "/"), ""):
			t.Fatalf("%q: encoded directory %q", name, enc)
		case objectstore.ValidateKey(st.ManifestKey()) != nil || objectstore.ValidateKey(st.DataPrefix()+"/x") != nil:
			t.Fatalf("%q: invalid keys %q %q", name, st.ManifestKey(), st.DataPrefix())
		}
		if dec, err := stream.DecodeDir(enc); err != nil || dec != name {
			t.Fatalf("%q: encoded %q decodes to %q, %v", name, enc, dec, err)
		}
		if prev, ok := seen[root]; ok && (prev.name != name || prev.basin != basin) {
			t.Fatalf("(%q, %q) and (%q, %q) share the root %q", prev.basin, prev.name, basin, name, root)
		}
		if _, ok := seen[root]; !ok {
			seen[root] = loc{basin, name, root}
			all = append(all, loc{basin, name, root})
		}
	}
	// No root is a prefix of another's (sorted, a prefix sorts right before its extensions).
	sort.Slice(all, func(i, j int) bool { return all[i].root < all[j].root })
	for i := 1; i < len(all); i++ {
		if strings.HasPrefix(all[i].root+"/", all[i-1].root+"/") {
			t.Fatalf("(%q, %q) at %q lies inside (%q, %q) at %q", all[i].basin, all[i].name, all[i].root, all[i-1].basin, all[i-1].name, all[i-1].root)
		}
	}
	// Invalid names are refused, not mapped somewhere.
	for _, c := range []struct{ basin, name string }{{"", ""}, {"", strings.Repeat("x", 513)}, {"../up", "s"}, {"Basin-Upper", "s"}, {"b", "s"}, {"basin/one", "s"}} {
		if st, err := stream.Locate(c.basin, c.name); err == nil {
			t.Errorf("Locate(%q, %.20q) = %+v, want an error", c.basin, c.name, st)
		}
	}
}

// FuzzLocatePair: two distinct (basin, name) pairs never share a key prefix.
func FuzzLocatePair(f *testing.F) {
	f.Add("", "a", "", "a/data")
	f.Add("", "..", "", ".")
	f.Add("basin-one", "x", "", "x")
	f.Add("", "a%2Fb", "", "a/b")
	f.Add("", "streams", "basin-one", "streams")
	f.Fuzz(func(t *testing.T, b1, n1, b2, n2 string) {
		s1, err1 := stream.Locate(b1, n1)
		s2, err2 := stream.Locate(b2, n2)
		if err1 != nil || err2 != nil || (b1 == b2 && n1 == n2) {
			return
		}
		r1, r2 := strings.TrimSuffix(s1.ManifestKey(), "manifest"), strings.TrimSuffix(s2.ManifestKey(), "manifest")
		if strings.HasPrefix(r1, r2) || strings.HasPrefix(r2, r1) {
			t.Fatalf("(%q, %q) at %q and (%q, %q) at %q overlap", b1, n1, r1, b2, n2, r2)
		}
		if strings.HasPrefix(s1.ManifestKey(), "basins/") == (b1 == "") {
			t.Fatalf("(%q, %q) at %q: wrong namespace", b1, n1, s1.ManifestKey())
		}
	})
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// daemon is a running "sluice serve".
type daemon struct {
	cmd *exec.Cmd
	out *bytes.Buffer // stdout and stderr
	mu  chan struct{} // closed when it exited
}

func startServe(t *testing.T, env []string, args ...string) *daemon {
	t.Helper()
	d := &daemon{out: &bytes.Buffer{}, mu: make(chan struct{})}
	d.cmd = exec.Command(sluiceBin(t), append([]string{"serve"}, args...)...)
	d.cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	d.cmd.Stdout, d.cmd.Stderr = pw, pw
	copied := make(chan struct{})
	go func() { io.Copy(d.out, pr); close(copied) }()
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.cmd.Wait(); pw.Close(); <-copied; close(d.mu) }()
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop sends SIGTERM and waits (SIGKILL after 20 s).
func (d *daemon) stop(t *testing.T) string {
	select {
	case <-d.mu:
		return d.out.String()
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.mu:
	case <-time.After(20 * time.Second):
		d.cmd.Process.Kill()
		<-d.mu
		t.Errorf("sluice serve did not stop on SIGTERM")
	}
	return d.out.String()
}

// waitUp polls until the daemon accepts TCP connections.
func (d *daemon) waitUp(t *testing.T, addr string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		select {
		case <-d.mu:
			t.Fatalf("sluice serve exited:\n%s", d.out.String())
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("sluice serve did not listen on %s", addr)
}

// TestServeTLS: with --tls-cert/--tls-key the daemon speaks HTTPS (a client trusting the
// self-signed certificate gets answers; plain HTTP gets none), the token is required, and
// --max-body-bytes refuses a larger body with 413.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	addr := freeAddr(t)
	d := startServe(t, []string{"SLUICE_AUTH_TOKEN=tls-test-token"}, "--store", "file://"+filepath.Join(dir, "data"), "--listen", addr,
		"--tls-cert", certFile, "--tls-key", keyFile, "--no-gc", "--max-body-bytes", "1048576")
	d.waitUp(t, addr)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	do := func(method, path, body string, auth bool) (int, string) {
		req, _ := http.NewRequest(method, "https://"+addr+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth {
			req.Header.Set("Authorization", "Bearer tls-test-token")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s over TLS: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do("GET", "/health", "", false); code != 200 {
		t.Errorf("/health over TLS: %d %s", code, body)
	}
	if code, _ := do("GET", "/v1/basins", "", false); code != 401 {
		t.Errorf("/v1/basins without the token: %d, want 401", code)
	}
	if code, body := do("POST", "/v1/basins", `{"basin":"tls-basin"}`, true); code != 201 {
		t.Errorf("create basin over TLS: %d %s", code, body)
	}
	big := `{"basin":"` + strings.Repeat("x", 2<<20) + `"}`
	if code, body := do("POST", "/v1/basins", big, true); code != 413 {
		t.Errorf("2 MiB body with --max-body-bytes 1 MiB: %d %.200s", code, body)
	}
	// Plain HTTP to the TLS port gets no API answer.
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/health")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && string(b) == "ok" {
			t.Error("plain HTTP got an answer from the TLS port")
		}
	}
	// A client that does not trust the certificate is refused.
	if _, err := (&http.Client{Timeout: 5 * time.Second}).Get("https://" + addr + "/health"); err == nil {
		t.Error("a client without the certificate connected")
	}
	d.stop(t)
}

// TestNoSecretsInLogs runs the daemon at debug level with an auth token and an S3 store URL
// with credentials in the environment, sends authorized and unauthorized calls (one with a
// wrong token), reads /metrics, stops it, and checks that neither the token, the wrong token
// nor the AWS secret appears in its output or its metrics.
func TestNoSecretsInLogs(t *testing.T) {
	storeURL := os.Getenv("SLUICE_TEST_S3_URL")
	secret := os.Getenv("AWS_SECRET_ACCESS_KEY")
	env := []string{"SLUICE_AUTH_TOKEN=tok-9f8e7d6c5b4a-never-log-me"}
	if storeURL == "" || secret == "" {
		// No S3 server: a store nobody listens on, with made-up credentials; the daemon logs
		// its connection errors, which must not carry the secret either.
		storeURL = "s3://nobucket/p?endpoint=http://" + freeAddr(t) + "&region=us-east-1&path_style=true"
		secret = "AWSSECRETnever-log-me-0123456789abcdef"
		env = append(env, "AWS_ACCESS_KEY_ID=AKIATESTNOTREAL", "AWS_SECRET_ACCESS_KEY="+secret)
	} else {
		u := storeURL
		if i := strings.Index(u, "?"); i >= 0 {
			u = u[:i] + fmt.Sprintf("/secrets-%d", time.Now().UnixNano()) + u[i:]
		}
		storeURL = u
		t.Cleanup(func() { // the basin the test creates
			if err := removeAll(storeURL); err != nil {
				t.Errorf("cleaning up %s: %v", storeurl.Redact(storeURL), err)
			}
		})
	}
	addr := freeAddr(t)
	d := startServe(t, env, "--store", storeURL, "--listen", addr, "--log-level", "debug", "--no-gc")
	d.waitUp(t, addr)
	client := &http.Client{Timeout: 15 * time.Second}
	var metrics string
	for _, c := range []struct{ method, path, auth, body string }{
		{"GET", "/health", "", ""},
		{"GET", "/v1/basins", "Bearer tok-9f8e7d6c5b4a-never-log-me", ""},
		{"POST", "/v1/basins", "Bearer tok-9f8e7d6c5b4a-never-log-me", `{"basin":"secret-basin"}`},
		{"GET", "/v1/basins", "Bearer wrong-guess-never-log-me", ""},
		{"GET", "/v1/basins", "tok-9f8e7d6c5b4a-never-log-me", ""},
		{"GET", "/metrics", "", ""},
	} {
		req, _ := http.NewRequestWithContext(context.Background(), c.method, "http://"+addr+c.path, strings.NewReader(c.body))
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if c.path == "/metrics" {
			metrics = string(b)
		}
	}
	out := d.stop(t)
	if !strings.Contains(out, "level=") && !strings.Contains(out, `"level"`) {
		t.Errorf("the daemon logged nothing at debug level; the check would prove nothing:\n%s", out)
	}
	for _, s := range []string{"tok-9f8e7d6c5b4a", "wrong-guess-never-log-me", secret} {
		if strings.Contains(out, s) {
			t.Errorf("the log holds a secret (%.6s...):\n%s", s, out)
		}
		if strings.Contains(metrics, s) {
			t.Errorf("/metrics holds a secret (%.6s...)", s)
		}
	}
	t.Logf("%d bytes of log checked:\n%s", len(out), out)
}

// TestNoSecretsInURLErrors: credentials put in a store URL (unsupported) are refused without
// being echoed, by serve and by the library-mode commands.
func TestNoSecretsInURLErrors(t *testing.T) {
	const pass = "urlpass-never-log-me"
	for _, args := range [][]string{
		{"serve", "--listen", freeAddr(t), "--no-gc"},
		{"tail", "s"},
		{"read", "s"},
	} {
		cmd := exec.Command(sluiceBin(t), append(args, "--store", "s3://AKIAUSER:"+pass+"@bucket/p?region=us-east-1")...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%v with credentials in the URL succeeded", args)
		}
		if strings.Contains(string(out), pass) {
			t.Errorf("%v echoed the URL's password:\n%s", args, out)
		}
		if len(out) == 0 {
			t.Errorf("%v: no error message", args)
		}
	}
}

// removeAll deletes every object of the store at url (a test's own prefix), within a minute.
func removeAll(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := storeurl.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	return objectstore.ListAll(ctx, st, "", func(o objectstore.ObjectInfo) error { return st.Delete(ctx, o.Key) })
}
