package server_test

import (
	"fmt"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/server"
	"github.com/sluice-dev/sluice/server/servertest"
)

// memStream starts a server on the engine over a memory store with opts, creates stream "s" in
// servertest.TestBasin and appends n records to it, with bodies "r0", "r1", ... (10 metered
// bytes each below 10).
func memStream(t *testing.T, n int, opts ...server.Option) *servertest.Env {
	t.Helper()
	env := servertest.Start(t, newEngineBackend, opts...)
	ctx := t.Context()
	if _, err := env.Backend.CreateStream(ctx, servertest.TestBasin, "s", s2api.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return env
	}
	in := batchfmt.AppendInput{}
	for i := range n {
		in.Records = append(in.Records, batchfmt.Record{Body: fmt.Appendf(nil, "r%d", i)})
	}
	if _, err := env.Backend.Append(ctx, servertest.TestBasin, "s", in); err != nil {
		t.Fatal(err)
	}
	return env
}
