package main

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-dev/sluice/committer"
	"github.com/sluice-dev/sluice/daemon"
)

// serveFlags are serve's flags: a daemon.Config, but for the store (the global --store) and
// TLS (read from files).
type serveFlags struct {
	listen          string
	shutdownTimeout time.Duration
	authToken       string
	tlsCert         string
	tlsKey          string
	maxBodyBytes    int64
	flushInterval   time.Duration
	deliveryTimeout time.Duration
	gcInterval      time.Duration
	gcGracePeriod   time.Duration
	noGC            bool
	advertiseURL    string
	noCommitter     bool
	committerLease  time.Duration
	journal         bool
	lagInterval     time.Duration
}

// register defines the flags on fl, with daemon.DefaultConfig's defaults.
func (f *serveFlags) register(fl *pflag.FlagSet) {
	def := daemon.DefaultConfig()
	fl.StringVar(&f.listen, "listen", def.Listen, "address to listen on (host:port)")
	fl.Var(newDurationValue(&f.shutdownTimeout, def.ShutdownTimeout), "shutdown-timeout", "how long to wait for in-flight work on shutdown")
	fl.StringVar(&f.authToken, "auth-token", "", "require this bearer token on API calls (prefer SLUICE_AUTH_TOKEN: flags show in ps)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (PEM); serve HTTPS with --tls-key")
	fl.StringVar(&f.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", def.MaxBodyBytes, "largest request body accepted, in bytes (at least 1 MiB)")
	fl.Var(newDurationValue(&f.flushInterval, def.FlushInterval), "flush-interval", "how long a producer collects appends into one batch object")
	fl.Var(newDurationValue(&f.deliveryTimeout, def.DeliveryTimeout), "delivery-timeout", "how long after it arrives an append may wait to be committed (opening its stream, buffer space, upload and manifest write; not its time in the open batch) before it fails with 503 unavailable, nothing of it in the stream; one that waited over half of it to be handed to its stream's producer is refused then (one a manifest write may have committed waits for that write's outcome; 0: wait as long as the store is out)")
	fl.Var(newDurationValue(&f.gcInterval, def.GCInterval), "gc-interval", "how often retention and garbage collection run over every stream")
	fl.Var(newDurationValue(&f.gcGracePeriod, def.GCGracePeriod), "gc-grace-period", "minimum age (by the store's clock) of an unreferenced object before it is deleted; producers re-upload batches older than half of it ("+gracePeriodHelp+")")
	fl.StringVar(&f.advertiseURL, "advertise-url", "", "the URL other processes reach this daemon's committer at (such as http://10.0.0.5:8080); default: derived from --listen (the machine's hostname for a wildcard host)")
	fl.BoolVar(&f.noCommitter, "no-committer", false, "do not act as a committer: this daemon's writes commit directly, and it takes no commit requests")
	fl.Var(newDurationValue(&f.committerLease, def.CommitterLease), "committer-lease", "how long each of the committer's writes holds a stream's committer role: once it stops answering, another committer can take the role this long after its last write (positive, under 1m)")
	fl.BoolVar(&f.journal, "journal", false, "commit through a journal: one object per commit window for every stream, acknowledged once durable, with appends' records carried in it (no batch object each); manifests are brought up to date every 30s while a stream has new commits, and no write renews the lease (another daemon asks this one before taking its streams; see docs/journal.md)")
	fl.Var(newDurationValue(&f.lagInterval, def.LagInterval), "lag-interval", "how often the consumer group lag and manifest size gauges of the streams this daemon serves are refreshed (one conditional manifest read per stream; 0 turns them off)")
	fl.BoolVar(&f.noGC, "no-gc", false, "do not run retention and garbage collection in this daemon (run them elsewhere, e.g. sluice gc --once)")
}

// validate checks the flags, each error naming its flag; daemon.New checks the Config again.
func (f *serveFlags) validate() error {
	var errs []error
	if f.listen == "" {
		errs = append(errs, errors.New("--listen is empty: give host:port, such as 127.0.0.1:8080"))
	}
	if f.shutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --shutdown-timeout: must be positive", f.shutdownTimeout))
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key must be given together"))
	}
	if f.maxBodyBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("invalid value %d for --max-body-bytes: must be at least 1048576", f.maxBodyBytes))
	}
	if f.flushInterval < 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --flush-interval: must not be negative", f.flushInterval))
	}
	if f.lagInterval < 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --lag-interval: must not be negative", f.lagInterval))
	}
	if f.gcInterval <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %v for --gc-interval: must be positive", f.gcInterval))
	}
	if _, err := checkGracePeriod("--gc-grace-period", f.gcGracePeriod); err != nil {
		errs = append(errs, err)
	}
	if idle := committer.DefaultConfig().IdleTimeout; f.committerLease <= 0 || f.committerLease >= idle {
		errs = append(errs, fmt.Errorf("invalid value %v for --committer-lease: must be positive and less than %v (the committer's idle timeout)", f.committerLease, idle))
	}
	if f.journal && f.noCommitter {
		errs = append(errs, errors.New("--journal needs the committer: drop --no-committer"))
	}
	if f.advertiseURL != "" && f.noCommitter {
		errs = append(errs, errors.New("--advertise-url and --no-committer exclude each other"))
	}
	if f.advertiseURL != "" {
		if u, err := url.Parse(f.advertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("invalid value %q for --advertise-url: give the URL other processes reach this daemon at, such as http://10.0.0.5:8080", f.advertiseURL))
		}
	}
	return errors.Join(errs...)
}

// config is the daemon's Config for the flags (Store and TLS left to the caller).
func (f *serveFlags) config() daemon.Config {
	cfg := daemon.DefaultConfig()
	cfg.Listen = f.listen
	cfg.ShutdownTimeout = f.shutdownTimeout
	cfg.AuthToken = f.authToken
	cfg.MaxBodyBytes = f.maxBodyBytes
	cfg.FlushInterval = flushInterval(f.flushInterval)
	cfg.DeliveryTimeout = f.deliveryTimeout
	cfg.LagInterval = f.lagInterval
	cfg.Committer = !f.noCommitter
	cfg.AdvertiseURL = f.advertiseURL
	cfg.CommitterLease = f.committerLease
	cfg.Journal = f.journal
	cfg.GC = !f.noGC
	cfg.GCInterval = f.gcInterval
	cfg.GCGracePeriod = f.gcGracePeriod
	return cfg
}
