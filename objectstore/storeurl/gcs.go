//go:build !sluice_nogcs

package storeurl

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	thgcs "github.com/thanos-io/objstore/providers/gcs"
	"google.golang.org/api/option"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/gcs"
)

// Google Cloud Storage, unless built with the tag sluice_nogcs (gcs_off.go): Google's client
// is most of the binary's size.

// ThanosGCSConfig is thanos-io/objstore's GCS config type.
type ThanosGCSConfig = thgcs.Config

// GCSConfig returns the GCS configuration of a gs location: credentials from Google's
// chain, or the emulator in STORAGE_EMULATOR_HOST.
func (l Location) GCSConfig() gcs.Config {
	return gcs.Config{Bucket: l.Bucket}
}

func validateGCSBucket(name string) error { return gcs.ValidateBucket(name) }

func openGCS(ctx context.Context, loc Location, logger *slog.Logger) (objectstore.Store, error) {
	cfg := loc.GCSConfig()
	cfg.Logger = logger
	return gcs.New(ctx, cfg)
}

func parseThanosGCS(strict func(into any) error) (*ThanosGCSConfig, error) {
	c := thgcs.DefaultConfig
	if err := strict(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

// openThanosGCS opens a Thanos GCS config: the bucket, with service_account's JSON key
// (of whatever type it says) or else Google's chain.
func openThanosGCS(ctx context.Context, c *ThanosGCSConfig, logger *slog.Logger) (objectstore.Store, error) {
	cfg := gcs.Config{Bucket: c.Bucket, Logger: logger}
	if sa := c.ServiceAccount; sa != "" {
		var kind struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(sa), &kind); err != nil {
			return nil, fmt.Errorf("%w: type GCS: service_account is not a JSON key: %v", ErrInvalidThanosConfig, err)
		}
		cfg.ClientOptions = append(cfg.ClientOptions, option.WithAuthCredentialsJSON(option.CredentialsType(kind.Type), []byte(sa)))
	}
	return gcs.New(ctx, cfg)
}
