package consumer

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
)

// FuzzRead checks any start and any limits against the model of the stream: the records
// returned are exactly the expected slice, a start past the tail is a *RangeError carrying the
// tail, and nothing panics.
func FuzzRead(f *testing.F) {
	f.Add(uint8(0), uint64(0), false, uint64(0), false, uint64(0), false, uint64(0), false, false)
	f.Add(uint8(0), uint64(7), true, uint64(3), false, uint64(0), false, uint64(0), true, false)
	f.Add(uint8(1), uint64(baseTS+40), false, uint64(0), true, uint64(200), false, uint64(0), false, true)
	f.Add(uint8(2), uint64(5), false, uint64(0), false, uint64(0), true, uint64(baseTS+100), false, false)
	f.Add(uint8(0), uint64(1<<63), false, uint64(0), false, uint64(0), false, uint64(0), true, false)
	f.Add(uint8(3), uint64(1), false, uint64(0), false, uint64(0), false, uint64(0), false, false)
	store := objectstore.NewMemStore()
	fx := newFixture(f, store, manifest.DefaultConfig(), batchfmt.CompressionNone)
	fx.standard(rand.New(rand.NewPCG(42, 42)), 8)
	r := fx.reader(func(c *Config) { c.MaxBatchRecords = 3 })
	f.Fuzz(func(t *testing.T, kind uint8, value uint64, hasCount bool, count uint64, hasBytes bool, bytes uint64,
		hasUntil bool, until uint64, clamp bool, skipCommands bool) {
		n := uint64(len(fx.want))
		req := ReadRequest{Start: Start{Kind: StartKind(kind % 5), Value: value, Clamp: clamp}, SkipCommands: skipCommands}
		if hasCount {
			req.Count = &count
		}
		if hasBytes {
			req.Bytes = &bytes
		}
		if hasUntil {
			req.Until = &until
		}
		got, err := r.ReadAll(context.Background(), req)
		var want []wantRec
		switch req.Start.Kind {
		case StartSeqNum:
			if value > n && !clamp {
				var re *RangeError
				if !errors.As(err, &re) || re.Tail.SeqNum != n || re.Start != value {
					t.Fatalf("start %d past the tail %d: %v", value, n, err)
				}
				return
			}
			want = fromSeq(fx.want, value)
		case StartTimestamp:
			want = fromTS(fx.want, value)
		case StartTailOffset:
			want = fx.want[n-min(value, n):]
		default:
			if !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("start kind %d: %v", req.Start.Kind, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if skipCommands {
			var env []wantRec
			for _, w := range want {
				if w.command == "" {
					env = append(env, w)
				}
			}
			want = env
		}
		check(t, "fuzz", got, limit(want, req.Count, req.Bytes, req.Until))
	})
}
