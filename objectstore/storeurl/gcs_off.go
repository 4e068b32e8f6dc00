//go:build sluice_nogcs

package storeurl

import (
	"context"
	"errors"
	"log/slog"

	"github.com/sluice-dev/sluice/objectstore"
)

// errNoGCS is what gs:// URLs and GCS Thanos configs fail with in a binary built with the
// tag sluice_nogcs, which leaves Google's client (most of the binary's size) out.
var errNoGCS = errors.New("storeurl: this sluice was built without Google Cloud Storage (build tag sluice_nogcs)")

// ThanosGCSConfig stands in for thanos-io/objstore's GCS config type.
type ThanosGCSConfig struct {
	Bucket string
}

func validateGCSBucket(string) error { return nil }

func openGCS(context.Context, Location, *slog.Logger) (objectstore.Store, error) {
	return nil, errNoGCS
}

func parseThanosGCS(func(into any) error) (*ThanosGCSConfig, error) { return nil, errNoGCS }

func openThanosGCS(context.Context, *ThanosGCSConfig, *slog.Logger) (objectstore.Store, error) {
	return nil, errNoGCS
}
