package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/s2api"
)

// TestBasinDefaultStreamConfigValidated: a basin's default stream config is checked when
// the basin is created or reconfigured (an invalid one is the client's error, 422), not
// later, when every stream created in the basin would fail with it.
func TestBasinDefaultStreamConfigValidated(t *testing.T) {
	ctx := context.Background()
	b := newEngine(t, objectstore.NewMemStore(), nil).S2()
	bogus := "bogus"
	zero := s2api.RetentionPolicy{}
	bad := []s2api.StreamConfig{
		{Timestamping: &s2api.TimestampingConfig{Mode: &bogus}},
		{RetentionPolicy: &zero},
		{StorageClass: &bogus},
	}
	for i, sc := range bad {
		_, err := b.CreateBasin(ctx, "basin-bad", s2api.BasinConfig{DefaultStreamConfig: &sc})
		var ae *s2api.Error
		if !errors.As(err, &ae) || ae.Code != s2api.CodeInvalid {
			t.Fatalf("config %d: create: %v, want %s", i, err, s2api.CodeInvalid)
		}
	}
	if _, err := b.CreateBasin(ctx, "basin-good", s2api.BasinConfig{}); err != nil {
		t.Fatal(err)
	}
	for i, sc := range bad {
		_, err := b.ReconfigureBasin(ctx, "basin-good", s2api.BasinReconfiguration{DefaultStreamConfig: &sc})
		var ae *s2api.Error
		if !errors.As(err, &ae) || ae.Code != s2api.CodeInvalid {
			t.Fatalf("config %d: reconfigure: %v, want %s", i, err, s2api.CodeInvalid)
		}
	}
	if _, err := b.CreateStream(ctx, "basin-good", "s", s2api.StreamConfig{}); err != nil {
		t.Fatalf("a stream in the basin after refused reconfigurations: %v", err)
	}
}
