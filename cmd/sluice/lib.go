package main

// Helpers shared by the library-mode commands (append, read, tail, stream, fence, trim,
// inspect, gc, consume): they work on the store named by --store directly, without a daemon.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/committer/commitclient"
	"github.com/sluice-dev/sluice/internal/journalview"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/s2api"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/watch"
)

// libEnv is what a library-mode command works with: the store, the logger and the stream
// namespace (--basin).
type libEnv struct {
	ctx   context.Context // the command's: ends on SIGINT/SIGTERM
	g     *globals
	basin *string
	store objectstore.Store
	log   *slog.Logger
}

// addBasinFlag adds --basin to a command that names streams.
func addBasinFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "basin", "", `basin of the stream ("" = the root namespace, which a daemon's S2 API does not serve: required with --endpoint)`)
}

// openLib opens the logger and the store of a library-mode command. Close the store when done.
func openLib(ctx context.Context, g *globals, basin *string) (*libEnv, error) {
	log, err := newLogger(g.logLevel, g.logFormat)
	if err != nil {
		return nil, err
	}
	if basin != nil && *basin != "" {
		if err := stream.ValidateBasinName(*basin); err != nil {
			return nil, fmt.Errorf("invalid value %q for --basin: %w", *basin, err)
		}
	}
	if !g.createsStore {
		if loc, err := storeurl.Parse(storeURL(g.store)); err == nil && loc.Scheme == "file" {
			if _, err := os.Stat(loc.Dir); errors.Is(err, fs.ErrNotExist) {
				if g.store != defaultStore {
					return nil, fmt.Errorf("--store %s: directory %s does not exist (sluice stream create, basin create or append --create makes a new store)", redactURL(g.store), loc.Dir)
				}
				// The default store before any command made it: an empty store, which
				// this command must not create (inspect, read and the like change nothing).
				log.Debug("the default store does not exist yet; reading it as empty", "dir", loc.Dir)
				return &libEnv{ctx: ctx, g: g, basin: basin, store: objectstore.NewMemStore(), log: log}, nil
			}
		}
	}
	s, err := openStore(ctx, g.store, log)
	if err != nil {
		return nil, err
	}
	return &libEnv{ctx: ctx, g: g, basin: basin, store: s, log: log}, nil
}

// openStream is openLib followed by locate: the commands that work on one stream start so.
// The caller closes the environment.
func openStream(ctx context.Context, g *globals, basin *string, name string) (*libEnv, stream.Stream, error) {
	e, err := openLib(ctx, g, basin)
	if err != nil {
		return nil, stream.Stream{}, err
	}
	st, err := e.locate(name)
	if err != nil {
		e.close()
		return nil, stream.Stream{}, err
	}
	return e, st, nil
}

func (e *libEnv) close() { _ = e.store.Close() }

func (e *libEnv) basinName() string {
	if e.basin == nil {
		return ""
	}
	return *e.basin
}

// validateNewStreamName applies the HTTP API's rule for stream names (1 to 512 bytes of UTF-8
// without NUL) to a stream the command creates, so that what stream list prints, as JSON,
// names it. (The store can hold any bytes; older streams keep whatever names they have.)
func validateNewStreamName(name string) error {
	if err := s2api.ValidateStreamName(name); err != nil {
		return fmt.Errorf("invalid stream name %q: %w", name, err)
	}
	return nil
}

// locate maps a stream name (an argument) to its place in the store.
func (e *libEnv) locate(name string) (stream.Stream, error) {
	st, err := stream.Locate(e.basinName(), name)
	if err != nil {
		return stream.Stream{}, fmt.Errorf("invalid stream name %q: %w", name, err)
	}
	return st, nil
}

// where describes a stream for messages: its name, basin and store.
func (e *libEnv) where(name string) string {
	s := fmt.Sprintf("stream %q", name)
	if b := e.basinName(); b != "" {
		s += fmt.Sprintf(" in basin %q", b)
	}
	return s + " in store " + redactURL(e.g.store)
}

// streamErr turns library errors about a stream into messages a user can act on.
func (e *libEnv) streamErr(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, manifest.ErrNotExist):
		if perr := e.probe(); perr != nil && e.ctx.Err() == nil {
			// Not this stream's absence but the store's: an S3 bucket that does not exist
			// answers a missing object the same way.
			return fmt.Errorf("%s: %w%s", e.where(name), perr, storeHint(perr))
		}
		// The hint creates the stream where this command looked: in its store and basin.
		hint := "sluice stream create " + shellQuote(name)
		if e.g.store != defaultStore {
			hint += " --store " + shellQuote(redactURL(e.g.store))
		}
		if b := e.basinName(); b != "" {
			hint += " --basin " + b
		}
		return fmt.Errorf("%s does not exist (create it with: %s)", e.where(name), hint)
	case errors.Is(err, manifest.ErrExists):
		return fmt.Errorf("%s already exists", e.where(name))
	case errors.Is(err, manifest.ErrGenerationChanged):
		return fmt.Errorf("%s was deleted and created again while this command ran: %w", e.where(name), err)
	case errors.Is(err, manifest.ErrCorrupt):
		return fmt.Errorf("%s: corrupt manifest: %w", e.where(name), err)
	}
	return fmt.Errorf("%s: %w%s", e.where(name), err, storeHint(err))
}

// probe lists one key of the store, to tell a missing stream from a store that cannot be
// listed at all (an S3 bucket that does not exist, say), and returns the listing's error. It
// ends with the command (SIGINT), or after 30 seconds.
func (e *libEnv) probe() error {
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	_, err := e.store.List(ctx, "", "", 1)
	return err
}

// storeHint suggests a fix for a store error that says the S3 bucket (or the file store's
// directory) does not exist or the credentials were refused.
func storeHint(err error) string {
	switch {
	case errors.Is(err, file.ErrRootMissing):
		return " (the store's directory was removed while sluice ran)"
	case errors.Is(err, objectstore.ErrNoBucket):
		return " (sluice does not create buckets: create it first, e.g. aws s3 mb s3://BUCKET)"
	case errors.Is(err, objectstore.ErrAccessDenied):
		return " (check the credentials, taken from the standard AWS chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ...; and the bucket's policy)"
	case errors.Is(err, objectstore.ErrConditionsUnsupported):
		return " (sluice needs an S3 server that honours If-None-Match and If-Match on PutObject: AWS S3 since August 2024, MinIO, versitygw, SeaweedFS, recent Ceph RGW; see the README)"
	}
	return ""
}

// load reads a stream's manifest.
func (e *libEnv) load(ctx context.Context, name string) (stream.Stream, *manifest.Snapshot, error) {
	st, err := e.locate(name)
	if err != nil {
		return st, nil, err
	}
	snap, err := manifest.Open(e.store, st.ManifestKey()).Load(ctx)
	if err != nil {
		return st, nil, e.streamErr(name, err)
	}
	return st, snap, nil
}

// view reads a stream's manifest and folds its journal into it: the stream as every
// committed record shows it (its tail), which the manifest alone may not.
func (e *libEnv) view(ctx context.Context, name string) (*manifest.State, error) {
	st, snap, err := e.load(ctx, name)
	if err != nil {
		return nil, err
	}
	view := snap.State.Clone()
	if err := journalview.Fold(ctx, e.store, st.ManifestKey(), view); err != nil {
		return nil, e.streamErr(name, err)
	}
	return view, nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// positionJSON is a stream position as S2 writes it.
type positionJSON struct {
	SeqNum    uint64 `json:"seq_num"`
	Timestamp uint64 `json:"timestamp"`
}

func posJSON(p manifest.Position) positionJSON {
	return positionJSON{SeqNum: p.SeqNum, Timestamp: p.Timestamp}
}

// ackJSON is an append acknowledgement as S2 writes it.
type ackJSON struct {
	Start positionJSON `json:"start"`
	End   positionJSON `json:"end"`
	Tail  positionJSON `json:"tail"`
}

// jsonOut writes one JSON value per line to w, flushing after each.
type jsonOut struct {
	w   *bufio.Writer
	enc *json.Encoder
}

func newJSONOut(w io.Writer) *jsonOut {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &jsonOut{w: bw, enc: enc}
}

// write writes v and flushes.
func (o *jsonOut) write(v any) error {
	if err := o.writeNoFlush(v); err != nil {
		return err
	}
	return o.flush()
}

func (o *jsonOut) writeNoFlush(v any) error {
	if err := o.enc.Encode(v); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

func (o *jsonOut) flush() error {
	if err := o.w.Flush(); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// printJSON writes one indented JSON document to w.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// parseDuration parses a Go duration ("90s", "1h30m") or a whole number of days ("7d").
func parseDuration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(d, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("want a duration such as 7d, 36h or 90s")
		}
		if maxDays := uint64(math.MaxInt64 / int64(24*time.Hour)); n > maxDays {
			return 0, fmt.Errorf("%sd is too long: at most %dd", d, maxDays)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as 7d, 36h or 90s")
	}
	if v < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	return v, nil
}

// flushInterval is the producer.Config.FlushInterval of a --flush-interval flag: 0, which the
// flag documents as flushing every append, is producer.FlushEveryAppend (the library refuses
// a zero interval).
func flushInterval(flag time.Duration) time.Duration {
	if flag == 0 {
		return producer.FlushEveryAppend
	}
	return flag
}

// durationValue is a flag holding a duration that also accepts days ("7d").
type durationValue struct{ d *time.Duration }

func newDurationValue(p *time.Duration, def time.Duration) *durationValue {
	*p = def
	return &durationValue{d: p}
}

func (v *durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return "0" // pflag leaves a "0" default out of --help
	}
	return v.d.String()
}
func (v *durationValue) Type() string { return "duration" }
func (v *durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parseSeq parses a sequence number argument.
func parseSeq(what, s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid %s %q: want a non-negative integer", what, s)
	}
	return n, nil
}

// exactArgs is cobra.ExactArgs with messages that name the arguments, taken from the
// command's Use line (its upper-case words before the first flag): "missing SEQ (usage:
// sluice trim STREAM SEQ)".
func exactArgs(cmd *cobra.Command, args []string) error {
	var names []string
	for _, w := range strings.Fields(cmd.Use)[1:] {
		if strings.HasPrefix(w, "-") {
			break
		}
		if w == strings.ToUpper(w) {
			names = append(names, w)
		}
	}
	usage := fmt.Sprintf("(usage: %s %s)", cmd.Parent().CommandPath(), cmd.Use)
	switch {
	case len(args) < len(names):
		return fmt.Errorf("missing %s %s", strings.Join(names[len(args):], " and "), usage)
	case len(args) > len(names):
		return fmt.Errorf("unexpected argument %q %s", args[len(names)], usage)
	}
	return nil
}

// followHub is the watch hub of a command that follows a stream (read --follow, consume):
// its manifest watcher follows the stream through the committer the manifest names (or
// committer, configured), told of each commit by its watch endpoint, and polls the store
// (at most once a second when idle) only while none answers. The caller closes it.
func (e *libEnv) followHub(committer commitclient.Config) (*watch.Hub, error) {
	cfg := watch.DefaultConfig()
	cfg.Logger = e.log
	cfg.Remote.Enabled = true
	cfg.Remote.Committer = committer
	return watch.New(cfg)
}
