package commitclient_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/committer/wire"
	"github.com/sluice-dev/sluice/journal"
	"github.com/sluice-dev/sluice/manifest"
)

// probeAnswer answers every request with resp, or fails with err.
type probeAnswer struct {
	resp *wire.Response
	err  error
	got  *wire.Request
}

func (p *probeAnswer) Commit(_ context.Context, _ string, req *wire.Request) (*wire.Response, error) {
	p.got = req
	return p.resp, p.err
}

// TestProbeOutcomes: an answer without Error is alive, not_holder is not, and no answer or
// any other answer is an error matching ErrProbe.
func TestProbeOutcomes(t *testing.T) {
	ctx := context.Background()
	role := manifest.CommitterRole{ID: "c", URL: "http://c.invalid", UntilMs: 99}
	for _, tc := range []struct {
		name   string
		tr     *probeAnswer
		alive  bool
		failed bool
	}{
		{"alive", &probeAnswer{resp: &wire.Response{Role: &role}}, true, false},
		{"not holder", &probeAnswer{resp: &wire.Response{Error: &wire.Error{Code: wire.CodeNotHolder}}}, false, false},
		{"old committer", &probeAnswer{resp: &wire.Response{Error: &wire.Error{Code: wire.CodeInvalid}}}, false, true},
		{"no answer", &probeAnswer{err: commitclient.ErrUnreachable}, false, true},
	} {
		alive, got, err := commitclient.Probe(ctx, tc.tr, nil, role.URL, journal.ID(0xab))
		if alive != tc.alive || (err != nil) != tc.failed || (err != nil && !errors.Is(err, commitclient.ErrProbe)) {
			t.Errorf("%s: alive %v, err %v", tc.name, alive, err)
		}
		if alive && got != role {
			t.Errorf("%s: vouched for %+v, want %+v", tc.name, got, role)
		}
		if tc.tr.got == nil || tc.tr.got.Journal != "00000000000000ab" || !tc.tr.got.IsProbe() {
			t.Errorf("%s: sent %+v, want a probe of 00000000000000ab", tc.name, tc.tr.got)
		}
	}
}

// TestProbeRoutesToTheVouchedHolder: a holder whose lease lapsed in the manifest but which
// answers a probe is where the client's next request goes, also after the writer reads the
// manifest's older lease again; another holder in the manifest replaces it.
func TestProbeRoutesToTheVouchedHolder(t *testing.T) {
	clk := &clock{now: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)}
	lapsed := manifest.CommitterRole{ID: "c", URL: "http://c.invalid", UntilMs: uint64(clk.Now().Add(-time.Second).UnixMilli())}
	vouched := lapsed
	vouched.UntilMs = uint64(clk.Now().Add(time.Minute).UnixMilli())
	cl := newClient(t, commitclient.Config{Now: clk.Now, Transport: &probeAnswer{resp: &wire.Response{Role: &vouched}}})
	cl.Observe(lapsed)
	if got := cl.URL(); got != "" {
		t.Fatalf("route %q with a lapsed role, want direct", got)
	}
	alive, err := cl.Probe(context.Background(), lapsed, journal.ID(1))
	if !alive || err != nil {
		t.Fatalf("probe: alive %v, err %v", alive, err)
	}
	cl.Observe(lapsed) // the manifest read again: its lease is older than the vouched one
	if got := cl.URL(); got != vouched.URL {
		t.Fatalf("route %q after the holder vouched for its role, want %q", got, vouched.URL)
	}
	other := manifest.CommitterRole{ID: "d", URL: "http://d.invalid", UntilMs: lapsed.UntilMs}
	cl.Observe(other)
	if got := cl.URL(); got != "" {
		t.Fatalf("route %q after another took the role (lapsed), want direct", got)
	}
}
