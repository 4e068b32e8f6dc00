package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/s2api"
)

// TestAPIErrorMessages: the messages clients see name the basin or say what exists, without
// the engine's package prefix or the manifest's key in the store.
func TestAPIErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code s2api.Code
		want string
	}{
		{fmt.Errorf("%w: %q", ErrBasinNotFound, "my-basin"), s2api.CodeBasinNotFound, `basin not found: "my-basin"`},
		{fmt.Errorf("%w: %q", ErrBasinExists, "my-basin"), s2api.CodeResourceAlreadyExists, `basin already exists: "my-basin"`},
		{fmt.Errorf("%w: basins/my-basin/streams/s1/manifest", manifest.ErrExists), s2api.CodeResourceAlreadyExists, "stream already exists"},
		// Storage errors give their class, not their text (bucket, keys, request ids).
		{objectstore.NewOpError("list", "bucket-x/basins/", objectstore.ErrNoBucket, errors.New("NoSuchBucket: bucket-x")), s2api.CodeStorage, "storage error (no_bucket)"},
		{objectstore.NewOpError("get", "k", objectstore.ErrAccessDenied, errors.New("403")), s2api.CodeStorage, "storage error (access_denied)"},
		{objectstore.NewOpError("get", "k", nil, errors.New("connection reset")), s2api.CodeStorage, "storage error"},
		// A delivery timeout says nothing was written (a client may resend), with the cause's
		// class when the store gave one.
		{fmt.Errorf("%w: batch 3 not stored within 30s (no store request finished)", producer.ErrDeliveryTimeout), s2api.CodeUnavailable, "the append (or one before it) was not committed within the delivery timeout; nothing of it is in the stream"},
		{fmt.Errorf("%w: batch 3 not stored within 30s: %w", producer.ErrDeliveryTimeout, objectstore.NewOpError("put", "basins/b/streams/s/data/x", objectstore.ErrNoBucket, nil)), s2api.CodeUnavailable, "the append (or one before it) was not committed within the delivery timeout; nothing of it is in the stream (storage error (no_bucket))"},
		// A cause that is not a refusal gives no class (the producer gives it as text only).
		{fmt.Errorf("%w: batch 3 stored but not committed within 30s: %w", producer.ErrDeliveryTimeout, errors.New("manifest: write: outcome unknown")), s2api.CodeUnavailable, "the append (or one before it) was not committed within the delivery timeout; nothing of it is in the stream"},
	} {
		var ae *s2api.Error
		if !errors.As(apiError(tc.err), &ae) {
			t.Fatalf("apiError(%v) is not an *s2api.Error", tc.err)
		}
		if ae.Code != tc.code || ae.Message != tc.want || strings.Contains(ae.Message, "engine:") || strings.Contains(ae.Message, "manifest") {
			t.Errorf("apiError(%v) = %s %q, want %s %q", tc.err, ae.Code, ae.Message, tc.code, tc.want)
		}
	}
}
