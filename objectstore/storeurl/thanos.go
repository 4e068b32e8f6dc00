package storeurl

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/aws/aws-sdk-go-v2/credentials"
	gokitlog "github.com/go-kit/log"
	thazure "github.com/thanos-io/objstore/providers/azure"
	thfs "github.com/thanos-io/objstore/providers/filesystem"
	ths3 "github.com/thanos-io/objstore/providers/s3"
	yaml2 "gopkg.in/yaml.v2"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/azblob"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/objectstore/s3"
)

// ErrInvalidThanosConfig matches every error about a Thanos bucket configuration itself.
var ErrInvalidThanosConfig = errors.New("storeurl: invalid Thanos bucket configuration")

// ErrThanosTypeUnsupported matches the error for a bucket type whose store cannot do
// conditional writes (create-only and compare-and-swap), which sluice needs.
var ErrThanosTypeUnsupported = errors.New("storeurl: the bucket type cannot do conditional writes")

// thanosBucketConfig is thanos-io/objstore's client.BucketConfig, field for field: the
// client package links every provider thanos has, which sluice refuses anyway.
type thanosBucketConfig struct {
	Type   string `yaml:"type"`
	Config any    `yaml:"config"`
	Prefix string `yaml:"prefix"`
}

// ThanosConfig is a parsed Thanos bucket configuration: the provider's own config type
// from thanos-io/objstore, filled as Thanos fills it (its defaults, then the YAML, strict).
type ThanosConfig struct {
	Type   string // "S3", "GCS", "AZURE" or "FILESYSTEM"
	Prefix string
	S3     *ths3.Config
	GCS    *ThanosGCSConfig
	Azure  *thazure.Config
	FS     *thfs.Config
}

// thanosScheme names a store given as a Thanos bucket configuration inside a store string
// (ThanosURL), so that it flows where a store URL does.
const thanosScheme = "thanos-objstore:"

// ParseThanosConfig parses a Thanos bucket configuration (YAML with type, config and
// prefix). A type other than S3, GCS, AZURE or FILESYSTEM fails with
// ErrThanosTypeUnsupported; other problems match ErrInvalidThanosConfig.
func ParseThanosConfig(data []byte) (ThanosConfig, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidThanosConfig}, args...)...)
	}
	var bc thanosBucketConfig
	if err := yaml2.UnmarshalStrict(data, &bc); err != nil {
		return ThanosConfig{}, bad("%v", err)
	}
	inner, err := yaml2.Marshal(bc.Config)
	if err != nil {
		return ThanosConfig{}, bad("config: %v", err)
	}
	tc := ThanosConfig{Type: strings.ToUpper(bc.Type), Prefix: strings.Trim(bc.Prefix, "/")}
	if tc.Prefix != "" {
		if err := objectstore.ValidateKey(tc.Prefix); err != nil {
			return ThanosConfig{}, bad("prefix %q: %v", bc.Prefix, err)
		}
	}
	strict := func(into any) error {
		if err := yaml2.UnmarshalStrict(inner, into); err != nil {
			return bad("type %s: config: %v", tc.Type, err)
		}
		return nil
	}
	switch tc.Type {
	case "S3":
		c := ths3.DefaultConfig
		if err := strict(&c); err != nil {
			return ThanosConfig{}, err
		}
		var problems []string
		if c.Bucket == "" {
			problems = append(problems, "no bucket")
		}
		if c.SSEConfig.Type != "" {
			problems = append(problems, "sse_config is not supported (sluice writes with the bucket's default encryption)")
		}
		if c.SignatureV2 {
			problems = append(problems, "signature_version2 is not supported")
		}
		if c.STSEndpoint != "" {
			problems = append(problems, "sts_endpoint is not supported (use the AWS chain: AWS_* variables, profiles, roles)")
		}
		if (c.AccessKey == "") != (c.SecretKey == "") {
			problems = append(problems, "access_key and secret_key go together")
		}
		if len(problems) > 0 {
			return ThanosConfig{}, bad("type S3: %s", strings.Join(problems, "; "))
		}
		tc.S3 = &c
	case "GCS":
		c, err := parseThanosGCS(strict)
		if err != nil {
			return ThanosConfig{}, err
		}
		if c.Bucket == "" {
			return ThanosConfig{}, bad("type GCS: no bucket")
		}
		tc.GCS = c
	case "AZURE":
		c := thazure.DefaultConfig
		if err := strict(&c); err != nil {
			return ThanosConfig{}, err
		}
		// Thanos's own validation: building its bucket checks the config and contacts
		// nothing when it need not create the container.
		check := c
		check.StorageCreateContainer = false
		b, err := thazure.NewBucketWithConfig(gokitlog.NewNopLogger(), check, "sluice", nil)
		if err != nil {
			return ThanosConfig{}, bad("type AZURE: %v", err)
		}
		_ = b.Close()
		tc.Azure = &c
	case "FILESYSTEM":
		c := thfs.Config{}
		if err := strict(&c); err != nil {
			return ThanosConfig{}, err
		}
		if c.Directory == "" {
			return ThanosConfig{}, bad("type FILESYSTEM: no directory")
		}
		tc.FS = &c
	case "":
		return ThanosConfig{}, bad("no type (want S3, GCS, AZURE or FILESYSTEM)")
	default:
		return ThanosConfig{}, fmt.Errorf("%w: type %s: thanos-io/objstore's %s bucket offers no create-only or compare-and-swap write, which sluice's manifest needs (use S3, GCS, AZURE or FILESYSTEM)",
			ErrThanosTypeUnsupported, tc.Type, tc.Type)
	}
	return tc, nil
}

// ThanosURL returns a store string that Open opens as the Thanos bucket configuration
// data, after checking that it parses. Redact shows only its type and bucket.
func ThanosURL(data []byte) (string, error) {
	if _, err := ParseThanosConfig(data); err != nil {
		return "", err
	}
	return thanosScheme + base64.RawURLEncoding.EncodeToString(data), nil
}

// thanosFromURL decodes a ThanosURL string; ok is false for any other string.
func thanosFromURL(raw string) (data []byte, ok bool, err error) {
	rest, found := strings.CutPrefix(raw, thanosScheme)
	if !found {
		return nil, false, nil
	}
	data, err = base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return nil, true, fmt.Errorf("%w: not a Thanos bucket configuration string", ErrInvalidThanosConfig)
	}
	return data, true, nil
}

// Describe names the bucket a Thanos configuration opens, without its secrets.
func (tc ThanosConfig) Describe() string {
	where := ""
	switch {
	case tc.S3 != nil:
		where = tc.S3.Bucket
		if tc.S3.Endpoint != "" {
			where += " at " + tc.S3.Endpoint
		}
	case tc.GCS != nil:
		where = tc.GCS.Bucket
	case tc.Azure != nil:
		where = tc.Azure.StorageAccountName + "/" + tc.Azure.ContainerName
	case tc.FS != nil:
		where = tc.FS.Directory
	}
	if tc.Prefix != "" {
		where += ", prefix " + tc.Prefix
	}
	return fmt.Sprintf("Thanos bucket config (%s %s)", tc.Type, where)
}

// OpenThanos opens the store a Thanos bucket configuration names, under its prefix. The
// configuration is read with thanos-io/objstore's config types and defaults; the store
// is sluice's own backend for the type (see docs/stores.md for which fields apply). An
// AZURE config with storage_create_container (Thanos's default) creates the container.
func OpenThanos(ctx context.Context, data []byte, opts ...Option) (objectstore.Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	tc, err := ParseThanosConfig(data)
	if err != nil {
		return nil, err
	}
	s, err := openThanos(ctx, tc, o.logger)
	if err != nil {
		return nil, err
	}
	ps, err := objectstore.WithPrefix(s, tc.Prefix)
	if err != nil {
		s.Close()
		return nil, err
	}
	return ps, nil
}

func openThanos(ctx context.Context, tc ThanosConfig, logger *slog.Logger) (objectstore.Store, error) {
	switch {
	case tc.S3 != nil:
		return s3.New(ctx, thanosS3(*tc.S3, logger))
	case tc.GCS != nil:
		return openThanosGCS(ctx, tc.GCS, logger)
	case tc.Azure != nil:
		return openThanosAzure(ctx, *tc.Azure, logger)
	case tc.FS != nil:
		return file.New(tc.FS.Directory)
	}
	return nil, fmt.Errorf("%w: no provider config", ErrInvalidThanosConfig)
}

// awsEndpoint matches a regional AWS S3 endpoint, the region its first group.
var awsEndpoint = regexp.MustCompile(`^s3[.-](?:dualstack\.)?([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com$`)

// thanosS3 maps Thanos's S3 config to sluice's: the endpoint is host[:port], over https
// unless insecure; bucket_lookup_type auto means path style off AWS, as minio-go does.
func thanosS3(c ths3.Config, logger *slog.Logger) s3.Config {
	cfg := s3.Config{Bucket: c.Bucket, Region: c.Region, ReadTimeout: s3.DefaultReadTimeout, Logger: logger}
	if m := awsEndpoint.FindStringSubmatch(c.Endpoint); m != nil && cfg.Region == "" {
		cfg.Region = m[1] // s3.eu-west-1.amazonaws.com names its region
	}
	if c.Endpoint != "" && !strings.HasSuffix(c.Endpoint, "amazonaws.com") {
		scheme := "https://"
		if c.Insecure {
			scheme = "http://"
		}
		cfg.Endpoint = scheme + c.Endpoint
	}
	switch c.BucketLookupType {
	case ths3.PathLookup:
		cfg.PathStyle = true
	case ths3.AutoLookup:
		cfg.PathStyle = cfg.Endpoint != ""
	}
	if cfg.Region == "" && cfg.Endpoint != "" {
		cfg.Region = "us-east-1" // minio-go's default for servers that do not care
	}
	if c.AccessKey != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(c.AccessKey, c.SecretKey, c.SessionToken)
	}
	return cfg
}

func openThanosAzure(ctx context.Context, c thazure.Config, logger *slog.Logger) (objectstore.Store, error) {
	cfg := azblob.Config{Container: c.ContainerName, Logger: logger}
	var err error
	switch {
	case c.StorageConnectionString != "":
		cfg.ConnectionString = c.StorageConnectionString
	default:
		cfg.Account = c.StorageAccountName
		cfg.Endpoint = "https://" + c.StorageAccountName + "." + c.Endpoint
		switch {
		case c.StorageAccountKey != "":
			cfg.AccountKey = c.StorageAccountKey
		case c.ClientSecret != "":
			cfg.Credential, err = azidentity.NewClientSecretCredential(c.AzTenantID, c.ClientID, c.ClientSecret, nil)
		case c.UserAssignedID != "":
			var cred azcore.TokenCredential
			cred, err = azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ID: azidentity.ClientID(c.UserAssignedID)})
			cfg.Credential = cred
		}
	}
	if err != nil {
		return nil, fmt.Errorf("objectstore: azblob: credentials: %w", err)
	}
	st, err := azblob.New(cfg)
	if err != nil {
		return nil, err
	}
	if c.StorageCreateContainer {
		if err := st.EnsureContainer(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}
