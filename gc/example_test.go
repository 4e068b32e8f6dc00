package gc_test

import (
	"context"

	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/gc"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// The daemon collects every stream of a store: the lister walks the catalog each round.
func ExampleRun() {
	ctx := context.Background()
	store := objectstore.NewMemStore()
	list := func(ctx context.Context) ([]stream.Stream, error) {
		var out []stream.Stream
		after := ""
		for {
			page, more, err := catalog.ListStreams(ctx, store, "", "", after, 1000)
			if err != nil {
				return nil, err
			}
			for _, s := range page {
				out = append(out, s)
				after = s.Name()
			}
			if !more {
				return out, nil
			}
		}
	}
	r, err := gc.Run(ctx, store, gc.DefaultConfig(), list)
	if err != nil {
		panic(err)
	}
	defer r.Close()
}
