package storeurl

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/azblob"
	"github.com/sluice-dev/sluice/objectstore/s3"
)

// ErrInvalidURL matches every error from Parse and Open about the URL itself.
var ErrInvalidURL = errors.New("storeurl: invalid store URL")

// URLError lists everything wrong with a store URL.
type URLError struct {
	URL      string   // the URL, with any password redacted
	Problems []string // one entry per problem
}

func (e *URLError) Error() string {
	return fmt.Sprintf("storeurl: invalid store URL %q: %s", e.URL, strings.Join(e.Problems, "; "))
}

// Unwrap makes errors.Is(err, ErrInvalidURL) hold.
func (e *URLError) Unwrap() error { return ErrInvalidURL }

// Location is a parsed store URL.
type Location struct {
	Scheme    string // "mem", "file", "s3", "gs" or "azblob"
	Dir       string // file: absolute or relative directory as given (cleaned)
	Bucket    string // s3, gs; azblob: the container
	Prefix    string // key prefix without leading or trailing slash; "" for none
	Endpoint  string // s3: custom endpoint, "" for AWS; azblob: service URL, "" for the account's
	Account   string // azblob: storage account name, "" to take it from the credentials
	Region    string // s3: "" for the AWS chain
	PathStyle bool   // s3
	// ReadTimeout (s3) is s3.Config.ReadTimeout: s3.DefaultReadTimeout unless the URL's
	// read_timeout says otherwise (0: none).
	ReadTimeout time.Duration
}

// AzureConfig returns the Azure configuration of an azblob location, with credentials
// from the environment: AZURE_STORAGE_CONNECTION_STRING when the URL names no account (or
// names the one the string names); else the account of the URL or of AZURE_STORAGE_ACCOUNT
// with AZURE_STORAGE_KEY if set, else Azure's default credential chain.
func (l Location) AzureConfig() azblob.Config {
	cfg := azblob.Config{Container: l.Bucket, Account: l.Account, Endpoint: l.Endpoint}
	if cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); cs != "" && l.Endpoint == "" &&
		(l.Account == "" || strings.Contains(cs, "AccountName="+l.Account+";")) {
		cfg.ConnectionString, cfg.Account = cs, ""
		return cfg
	}
	if cfg.Account == "" {
		cfg.Account = os.Getenv("AZURE_STORAGE_ACCOUNT")
	}
	cfg.AccountKey = os.Getenv("AZURE_STORAGE_KEY")
	return cfg
}

// S3Config returns the S3 configuration of an s3 location.
func (l Location) S3Config() s3.Config {
	return s3.Config{Bucket: l.Bucket, Region: l.Region, Endpoint: l.Endpoint, PathStyle: l.PathStyle, ReadTimeout: l.ReadTimeout}
}

// String formats the location as a URL that Parse maps back to an equal Location.
func (l Location) String() string {
	switch l.Scheme {
	case "mem":
		if l.Prefix == "" {
			return "mem://"
		}
		return "mem:///" + escapePath(l.Prefix)
	case "file":
		dir := l.Dir
		if !filepath.IsAbs(dir) {
			if dir == "." || dir == ".." || strings.HasPrefix(dir, "../") {
				return dir
			}
			return "./" + dir
		}
		return "file://" + escapePath(filepath.ToSlash(dir))
	case "s3":
		s := "s3://" + l.Bucket
		if l.Prefix != "" {
			s += "/" + escapePath(l.Prefix)
		}
		q := url.Values{}
		if l.Endpoint != "" {
			q.Set("endpoint", l.Endpoint)
		}
		if l.Region != "" {
			q.Set("region", l.Region)
		}
		if l.PathStyle {
			q.Set("path_style", "true")
		}
		if l.ReadTimeout != s3.DefaultReadTimeout {
			q.Set("read_timeout", l.ReadTimeout.String())
		}
		if len(q) > 0 {
			s += "?" + q.Encode()
		}
		return s
	case "gs", "azblob":
		s := l.Scheme + "://" + l.Bucket
		if l.Prefix != "" {
			s += "/" + escapePath(l.Prefix)
		}
		q := url.Values{}
		if l.Account != "" {
			q.Set("account", l.Account)
		}
		if l.Endpoint != "" {
			q.Set("endpoint", l.Endpoint)
		}
		if len(q) > 0 {
			s += "?" + q.Encode()
		}
		return s
	}
	return ""
}

func escapePath(p string) string {
	return (&url.URL{Path: p}).EscapedPath()
}

func sortedKeys(q url.Values) []string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var s3Params = []string{"endpoint", "region", "path_style", "read_timeout"}

// Redact returns raw with what may be a secret replaced by REDACTED: the user
// information, and the values of query parameters whose names mention a secret, key, token
// or password (a store URL takes none; one given by mistake must not be echoed).
func Redact(raw string) string {
	if data, ok, err := thanosFromURL(raw); ok {
		if tc, perr := ParseThanosConfig(data); err == nil && perr == nil {
			return tc.Describe()
		}
		return "<a Thanos bucket config>"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	changed := false
	if u.User != nil {
		u.User = url.User("REDACTED")
		changed = true
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		u.RawQuery = "<unparsable query>"
		return u.String()
	}
	queryChanged := false
	for k := range q {
		lk := strings.ToLower(k)
		if strings.Contains(lk, "secret") || strings.Contains(lk, "key") || strings.Contains(lk, "token") || strings.Contains(lk, "password") {
			q.Set(k, "REDACTED")
			queryChanged = true
		}
	}
	if !changed && !queryChanged {
		return raw // as given: u.String() would drop the "//" of a URL without a host
	}
	if queryChanged {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Parse parses a store URL (see the package documentation) without touching any backend. Errors
// are *URLError values naming every problem found.
func Parse(raw string) (Location, error) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	fail := func(shown string) (Location, error) {
		return Location{}, &URLError{URL: shown, Problems: problems}
	}
	if raw == "" {
		bad("empty URL")
		return fail(raw)
	}
	if strings.ContainsRune(raw, 0) {
		bad("contains NUL")
		return fail(strings.ReplaceAll(raw, "\x00", `\x00`))
	}
	scheme, _, hasScheme := strings.Cut(raw, "://")
	if !hasScheme || strings.ContainsAny(scheme, "/\\.") {
		// A plain path.
		if strings.Contains(raw, ":") && !strings.HasPrefix(raw, "/") && !strings.HasPrefix(raw, ".") && !strings.Contains(raw[:strings.Index(raw, ":")], "/") {
			bad("%q looks like a URL without \"//\"; use scheme://... or a path", raw)
			return fail(raw)
		}
		return Location{Scheme: "file", Dir: filepath.Clean(raw)}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		bad("%v", err)
		return fail(raw)
	}
	shown := Redact(raw)
	if u.User != nil {
		bad("credentials in the URL are not supported (use the environment or shared config)")
	}
	if u.Fragment != "" {
		bad("unexpected fragment %q", u.Fragment)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		bad("bad query: %v", err)
	}
	loc := Location{Scheme: strings.ToLower(u.Scheme)}
	switch loc.Scheme {
	case "mem":
		loc.Prefix = strings.Trim(u.Host+u.Path, "/")
		for k := range q {
			bad("unknown query parameter %q for mem://", k)
		}
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			bad("file URL host %q: only file:///path (or file://localhost/path) is supported", u.Host)
		}
		if u.Path == "" {
			bad("missing directory (want file:///abs/dir)")
		} else {
			loc.Dir = filepath.Clean(filepath.FromSlash(u.Path))
		}
		for k := range q {
			bad("unknown query parameter %q for file://", k)
		}
	case "s3":
		loc.Bucket = u.Host
		loc.ReadTimeout = s3.DefaultReadTimeout
		if loc.Bucket == "" {
			bad("missing bucket (want s3://bucket/prefix)")
		} else if err := s3.ValidateBucket(loc.Bucket); err != nil {
			bad("%s", strings.TrimPrefix(err.Error(), "objectstore: s3: "))
		}
		loc.Prefix = strings.Trim(u.Path, "/")
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			vals := q[k]
			if !slices.Contains(s3Params, k) {
				bad("unknown query parameter %q (known: %s)", k, strings.Join(s3Params, ", "))
				continue
			}
			if len(vals) != 1 {
				bad("query parameter %q given %d times", k, len(vals))
				continue
			}
			v := vals[0]
			switch k {
			case "endpoint":
				if err := s3.ValidateEndpoint(v); err != nil {
					bad("%s", strings.TrimPrefix(err.Error(), "objectstore: s3: "))
				}
				loc.Endpoint = v
			case "region":
				if v == "" || strings.ContainsAny(v, " /?#") {
					bad("bad region %q", v)
				}
				loc.Region = v
			case "path_style":
				b, err := strconv.ParseBool(v)
				if err != nil {
					bad("path_style=%q: want true or false", v)
				}
				loc.PathStyle = b
			case "read_timeout":
				d, err := time.ParseDuration(v)
				if err != nil || d < 0 {
					bad("read_timeout=%q: want a duration such as 2m, or 0s for none", v)
				}
				loc.ReadTimeout = d
			}
		}
	case "gs":
		loc.Bucket = u.Host
		if loc.Bucket == "" {
			bad("missing bucket (want gs://bucket/prefix)")
		} else if err := validateGCSBucket(loc.Bucket); err != nil {
			bad("%s", strings.TrimPrefix(err.Error(), "objectstore: gcs: "))
		}
		loc.Prefix = strings.Trim(u.Path, "/")
		for _, k := range sortedKeys(q) {
			bad("unknown query parameter %q for gs:// (credentials and the emulator come from the environment)", k)
		}
	case "azblob":
		loc.Bucket = u.Host
		if loc.Bucket == "" {
			bad("missing container (want azblob://container/prefix)")
		} else if err := azblob.ValidateContainer(loc.Bucket); err != nil {
			bad("%s", strings.TrimPrefix(err.Error(), "objectstore: azblob: "))
		}
		loc.Prefix = strings.Trim(u.Path, "/")
		if strings.Contains(loc.Prefix, `\`) {
			bad("prefix %q has a backslash, which Azure turns into a slash", loc.Prefix)
		}
		for _, k := range sortedKeys(q) {
			vals := q[k]
			if k != "account" && k != "endpoint" {
				bad("unknown query parameter %q (known: account, endpoint)", k)
				continue
			}
			if len(vals) != 1 {
				bad("query parameter %q given %d times", k, len(vals))
				continue
			}
			switch v := vals[0]; k {
			case "account":
				if err := azblob.ValidateAccount(v); err != nil {
					bad("%s", strings.TrimPrefix(err.Error(), "objectstore: azblob: "))
				}
				loc.Account = v
			case "endpoint":
				if err := azblob.ValidateEndpoint(v); err != nil {
					bad("%s", strings.TrimPrefix(err.Error(), "objectstore: azblob: "))
				}
				loc.Endpoint = v
			}
		}
	case "":
		bad("missing scheme")
	default:
		bad("unknown scheme %q (want mem, file, s3, gs or azblob)", u.Scheme)
	}
	if loc.Prefix != "" {
		if err := objectstore.ValidateKey(loc.Prefix); err != nil {
			bad("prefix %q is not a valid key path: %s", loc.Prefix, strings.TrimPrefix(err.Error(), objectstore.ErrInvalidKey.Error()+": "))
		}
	}
	if len(problems) > 0 {
		return fail(shown)
	}
	return loc, nil
}
