package azblob

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// DefaultKeyWritesPerSecond is the rate of writes to one blob the store states by default:
// Azure documents no per-blob write limit below its account-wide ones, and serves hundreds
// of writes per second to one blob; 100 keeps a manifest writer well inside that.
const DefaultKeyWritesPerSecond = 100.0

// Config configures New. Credentials come from ConnectionString, or AccountKey, or
// Credential, or else Azure's default credential chain; exactly one of ConnectionString and
// Account names the account.
type Config struct {
	// Container is required.
	Container string
	// ConnectionString, if set, names the account, its endpoint and its credentials
	// (AZURE_STORAGE_CONNECTION_STRING; Azurite's well-known one for the emulator).
	ConnectionString string
	// Account is the storage account name, required without ConnectionString.
	Account string
	// AccountKey, if set, authenticates with the account's shared key.
	AccountKey string
	// Endpoint is the blob service URL; "" means https://<Account>.blob.core.windows.net.
	Endpoint string
	// Credential, if set, authenticates with tokens (Entra ID); nil with neither key nor
	// connection string means azidentity.NewDefaultAzureCredential.
	Credential azcore.TokenCredential
	// KeyWritesPerSecond is the rate of writes to one blob the store states
	// (objectstore.WriteLimiter). Zero means DefaultKeyWritesPerSecond; not negative.
	KeyWritesPerSecond float64
	// Logger, if nil, discards.
	Logger *slog.Logger
}

func (c Config) validate() error {
	var problems []error
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf("objectstore: azblob: "+format, args...))
	}
	if c.Container == "" {
		bad("no container")
	} else if err := ValidateContainer(c.Container); err != nil {
		problems = append(problems, err)
	}
	switch {
	case c.ConnectionString != "" && (c.Account != "" || c.AccountKey != "" || c.Endpoint != ""):
		bad("a connection string names the account, its key and its endpoint: set none of Account, AccountKey, Endpoint with it")
	case c.ConnectionString == "" && c.Account == "":
		bad("no account: set a connection string (AZURE_STORAGE_CONNECTION_STRING) or an account name")
	}
	if c.Account != "" {
		if err := ValidateAccount(c.Account); err != nil {
			problems = append(problems, err)
		}
	}
	if c.AccountKey != "" && c.Credential != nil {
		bad("both an account key and a token credential")
	}
	if c.Endpoint != "" {
		if err := ValidateEndpoint(c.Endpoint); err != nil {
			problems = append(problems, err)
		}
	}
	if c.KeyWritesPerSecond < 0 {
		bad("KeyWritesPerSecond %v is negative", c.KeyWritesPerSecond)
	}
	return errors.Join(problems...)
}

// ValidateContainer reports a name Azure cannot hold as a container: 3 to 63 lowercase
// letters, digits and single dashes, starting and ending with a letter or digit.
func ValidateContainer(name string) error {
	ok := len(name) >= 3 && len(name) <= 63 && !strings.Contains(name, "--")
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(name)-1
	}
	if !ok {
		return fmt.Errorf("objectstore: azblob: container name %q: want 3-63 lowercase letters, digits and single dashes, starting and ending with a letter or digit", name)
	}
	return nil
}

// ValidateAccount reports a name Azure cannot hold as a storage account: 3 to 24 lowercase
// letters and digits.
func ValidateAccount(name string) error {
	ok := len(name) >= 3 && len(name) <= 24
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
	}
	if !ok {
		return fmt.Errorf("objectstore: azblob: account name %q: want 3-24 lowercase letters and digits", name)
	}
	return nil
}

// ValidateEndpoint reports a blob service URL that is not http(s)://host[/path].
func ValidateEndpoint(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("objectstore: azblob: bad endpoint %q: %v", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("objectstore: azblob: endpoint %q: scheme must be http or https", raw)
	case u.Host == "":
		return fmt.Errorf("objectstore: azblob: endpoint %q has no host", raw)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("objectstore: azblob: endpoint %q: want only scheme, host and path (credentials go elsewhere)", raw)
	}
	return nil
}
