package commitclient

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Config configures a Client. The zero value works: it asks the committer the manifest
// names, over HTTP without a token, and commits directly while none is live.
type Config struct {
	// URL is a committer (a sluice serve daemon) to ask while the stream's manifest names
	// none live; a live one it names is asked first. Default "": commit directly unless the
	// manifest names one.
	URL string
	// Token is the bearer token for the committers' API (serve --auth-token), for the
	// default transport.
	Token string
	// Transport sends requests to committers. Default nil: HTTP (http.DefaultClient) with
	// Token.
	Transport Transport
	// Local, if set, is a committer in this process: requests for its URL go to it directly.
	Local Local
	// RequestTimeout bounds the wait for each answer. Default 0: 10 s.
	RequestTimeout time.Duration
	// DirectFor: after a committer failed a request, the writer commits directly for this
	// long before it asks one again. Default 0: 10 s.
	DirectFor time.Duration
	// Now is the clock of the role's lease and of DirectFor. Default nil: time.Now.
	Now func() time.Time
}

// Defaults of the zero Config's timings.
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultDirectFor      = 10 * time.Second
)

// ErrInvalidConfig is matched by every problem Validate reports.
var ErrInvalidConfig = errors.New("commitclient: invalid config")

// Validate reports every problem of c at once (errors.Join), each matching
// ErrInvalidConfig.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.URL != "" {
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("committer %q is not an http(s) URL", c.URL)
		}
	}
	if c.RequestTimeout < 0 {
		bad("request timeout %v must not be negative", c.RequestTimeout)
	}
	if c.DirectFor < 0 {
		bad("direct-for %v must not be negative", c.DirectFor)
	}
	return errors.Join(errs...)
}

// withDefaults is c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Transport == nil {
		c.Transport = &HTTP{Token: c.Token}
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.DirectFor == 0 {
		c.DirectFor = DefaultDirectFor
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
