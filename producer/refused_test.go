package producer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
)

// refuseStore refuses the first n puts of batch objects (every key but the manifest's), or of
// the manifest when manifest is set, with kind, as S3 does a deleted bucket
// (objectstore.ErrNoBucket) or revoked credentials (ErrAccessDenied).
type refuseStore struct {
	objectstore.Store
	kind     error
	manifest bool
	mu       sync.Mutex
	n        int
	count    int // puts refused so far
}

// heal stops the refusals: the store is back.
func (s *refuseStore) heal() {
	s.mu.Lock()
	s.n = 0
	s.mu.Unlock()
}

func (s *refuseStore) refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

func (s *refuseStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	s.mu.Lock()
	refuse := s.n > 0 && strings.HasSuffix(key, "/manifest") == s.manifest
	if refuse {
		s.n--
		s.count++
	}
	s.mu.Unlock()
	if refuse {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, s.kind, nil)
	}
	return s.Store.Put(ctx, key, body, size, cond)
}

// logRecords keeps every record logged through it.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// find returns the level and the class attribute of the first record with message msg.
func (l *logRecords) find(msg string) (level slog.Level, class string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if r.Message != msg {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "class" {
				class = a.Value.String()
			}
			return true
		})
		return r.Level, class, true
	}
	return 0, "", false
}

// A store that refuses uploads (a missing bucket, refused credentials) is retried, as any
// failure is, until it heals, but logged at Error with its class, since only an operator
// can heal it; other failures stay at Warn.
func TestRefusedUploadsLogAtError(t *testing.T) {
	for _, c := range []struct {
		kind  error
		class string
		level slog.Level
	}{
		{objectstore.ErrNoBucket, "no_bucket", slog.LevelError},
		{objectstore.ErrAccessDenied, "access_denied", slog.LevelError},
		{objectstore.ErrOutcomeUnknown, "outcome_unknown", slog.LevelWarn},
	} {
		t.Run(c.class, func(t *testing.T) {
			store := &refuseStore{Store: newStreamStore(t), kind: c.kind, n: 3}
			logs := &logRecords{}
			cfg := testConfig(store)
			cfg.Logger = slog.New(logs)
			p := newProducer(t, cfg)
			ack, err := p.AppendSync(context.Background(), batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}})
			if err != nil {
				t.Fatalf("append after %d refused uploads: %v", 3, err)
			}
			if err := p.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if ack.Start.SeqNum != 0 || ack.End.SeqNum != 1 {
				t.Fatalf("ack %+v, want [0, 1)", ack)
			}
			level, class, ok := logs.find("upload failed, retrying")
			if !ok {
				t.Fatal("no log line for the refused uploads")
			}
			if level != c.level || class != c.class {
				t.Fatalf("logged at %v with class %q, want %v and %q", level, class, c.level, c.class)
			}
		})
	}
}

// A manifest write the store refuses is logged at Error with its class too.
func TestRefusedManifestWriteLogsAtError(t *testing.T) {
	store := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrAccessDenied, manifest: true, n: 2}
	logs := &logRecords{}
	cfg := testConfig(store)
	cfg.Logger = slog.New(logs)
	p := newProducer(t, cfg)
	_, err := p.AppendSync(context.Background(), batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Close(context.Background())
	level, class, ok := logs.find("manifest write failed, retrying")
	if !ok || level != slog.LevelError || class != "access_denied" {
		t.Fatalf("manifest write refused: logged %v at %v with class %q; want Error and access_denied", ok, level, class)
	}
}

// Close drains: it waits for an upload the store keeps refusing until its context ends, then
// aborts, and the append's ticket fails (as the package doc says).
func TestCloseWithRefusedUploadsWaitsForItsContext(t *testing.T) {
	store := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrNoBucket, n: 1 << 30}
	cfg := testConfig(store)
	p := newProducer(t, cfg)
	tk, err := p.Append(context.Background(), batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cerr := p.Close(ctx)
	_, werr := tk.Wait(context.Background())
	if !errors.Is(cerr, context.DeadlineExceeded) || werr == nil || store.refused() == 0 {
		t.Fatalf("Close: %v; ticket: %v; refused uploads %d; want Close to end with its context, the ticket failed, refusals", cerr, werr, store.refused())
	}
}

// A store whose server ignores conditional writes refuses every conditional put from then
// on (objectstore.ErrConditionsUnsupported), which no retry can change: an upload or a
// manifest write refused so fails every append at once, with that error (not
// ErrOutcomeUnknown: nothing was sent), however long the delivery timeout, and later
// appends are refused.
func TestConditionsUnsupportedFailsAtOnce(t *testing.T) {
	for _, manifestWrite := range []bool{false, true} {
		store := &refuseStore{Store: newStreamStore(t), kind: objectstore.ErrConditionsUnsupported, manifest: manifestWrite, n: 1 << 30}
		cfg := testConfig(store)
		cfg.DeliveryTimeout = time.Hour
		p := newProducer(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := p.AppendSync(ctx, batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("x")}}})
		cancel()
		if !errors.Is(err, objectstore.ErrConditionsUnsupported) || errors.Is(err, ErrDeliveryTimeout) || errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("manifest write %v: append: %v, want ErrConditionsUnsupported at once", manifestWrite, err)
		}
		if n := store.refused(); n != 1 {
			t.Errorf("manifest write %v: %d puts refused, want 1 (no retries)", manifestWrite, n)
		}
		if _, err := p.Append(context.Background(), batchfmt.AppendInput{Records: []batchfmt.Record{{Body: []byte("y")}}}); !errors.Is(err, objectstore.ErrConditionsUnsupported) {
			t.Errorf("manifest write %v: a later append: %v, want ErrConditionsUnsupported", manifestWrite, err)
		}
		_ = p.Close(context.Background())
	}
}
