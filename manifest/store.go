package manifest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// Handle is one stream's manifest: the object at a path in a store, and how its reads and
// updates retry. It holds no state of the stream (every method goes to the store) and is
// safe for concurrent use.
type Handle struct {
	store       objectstore.Store
	path        string
	backoff     Backoff
	maxAttempts int
}

// Option configures a Handle.
type Option func(*Handle)

// WithBackoff sets the backoff between the retries of LoadWithRetry, LoadOrCreate and Update
// (default DefaultBackoff).
func WithBackoff(b Backoff) Option { return func(m *Handle) { m.backoff = b } }

// WithMaxAttempts bounds Update's write attempts (default 50); n <= 0 means no bound but ctx.
func WithMaxAttempts(n int) Option { return func(m *Handle) { m.maxAttempts = n } }

// Open returns the handle on the manifest at path in store. It does no I/O.
func Open(store objectstore.Store, path string, opts ...Option) *Handle {
	m := &Handle{store: store, path: path, backoff: DefaultBackoff(), maxAttempts: 50}
	for _, opt := range opts {
		opt(m)
	}
	return m
}

// Snapshot is a manifest as read from (or written to) the store: the state and the store
// version it was read at, the version the next conditional write must name.
type Snapshot struct {
	State   *State
	Version string
}

// Load reads and decodes the manifest. ErrNotExist if there is none, or if the object
// there is a tombstone (see Create).
func (m *Handle) Load(ctx context.Context) (*Snapshot, error) {
	path := m.path
	data, info, err := objectstore.ReadAll(ctx, m.store, path)
	if err != nil {
		if errors.Is(err, objectstore.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s: %w", ErrNotExist, path, err)
		}
		return nil, fmt.Errorf("manifest: load %s: %w", path, err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: %s: the stream was deleted (tombstone)", ErrNotExist, path)
	}
	st, err := Decode(path, data)
	if err != nil {
		return nil, err
	}
	return &Snapshot{State: st, Version: info.Version}, nil
}

// Create writes a new, empty manifest with cfg, create-only. ErrExists if one is there.
// A create whose outcome is unknown is resolved by reading the manifest back: if it holds the
// generation just written, the create took effect.
//
// A zero-length object at path is a tombstone: the collector (delete_on_empty) deletes a
// stream by replacing its manifest with one, conditionally, and never deletes the key itself,
// so that a collector racing with a re-creation can never delete a live manifest. Load treats
// a tombstone as no manifest, and Create replaces it, conditionally on its version.
func (m *Handle) Create(ctx context.Context, cfg Config, now time.Time) (*Snapshot, error) {
	store, path := m.store, m.path
	st, err := NewState(cfg, now)
	if err != nil {
		return nil, err
	}
	if _, err := stamp(st); err != nil {
		return nil, err
	}
	data := st.Encode()
	info, err := objectstore.PutBytes(ctx, store, path, data, objectstore.IfAbsent())
	if errors.Is(err, objectstore.ErrPreconditionFailed) {
		// Something is there: a tombstone is replaced, conditionally on its version (the
		// common case, a free name, costs one request).
		head, herr := store.Head(ctx, path)
		switch {
		case herr == nil && head.Size == 0:
			info, err = objectstore.PutBytes(ctx, store, path, data, objectstore.IfMatch(head.Version))
		case herr != nil && !errors.Is(herr, objectstore.ErrNotFound):
			// Not knowing whether a tombstone is there, do not say the stream exists.
			return nil, fmt.Errorf("manifest: create %s: %w", path, herr)
		}
	}
	switch {
	case err == nil:
		return &Snapshot{State: st, Version: info.Version}, nil
	case errors.Is(err, objectstore.ErrPreconditionFailed):
		return nil, fmt.Errorf("%w: %s", ErrExists, path)
	case errors.Is(err, objectstore.ErrOutcomeUnknown):
		snap, lerr := m.Load(ctx)
		if lerr != nil {
			return nil, fmt.Errorf("%w: create %s: %w (read back: %w)", ErrOutcomeUnknown, path, err, lerr)
		}
		if snap.State.Generation == st.Generation {
			return snap, nil
		}
		return nil, fmt.Errorf("%w: %s", ErrExists, path)
	}
	return nil, fmt.Errorf("manifest: create %s: %w", path, err)
}

// LoadOrCreate loads the manifest, creating it with cfg when there is none. Plain failures
// (and a create whose outcome stays unknown) are retried with the handle's backoff, up to
// 20 attempts or until ctx ends; ErrNotExist never escapes, corruption and invalid config do,
// and the store's refusals (objectstore.Refused: a missing bucket, refused credentials, a
// server without conditional writes) at once.
func (m *Handle) LoadOrCreate(ctx context.Context, cfg Config, now time.Time) (*Snapshot, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	path, b := m.path, m.backoff
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if attempt > 0 {
			if serr := b.Sleep(ctx, attempt-1); serr != nil {
				return nil, fmt.Errorf("manifest: open %s: %w (last error: %w)", path, serr, err)
			}
		}
		var snap *Snapshot
		snap, err = m.Load(ctx)
		if err == nil || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupportedVersion) || objectstore.Refused(err) {
			return snap, err
		}
		if !errors.Is(err, ErrNotExist) {
			continue
		}
		snap, err = m.Create(ctx, cfg, now)
		if err == nil || objectstore.Refused(err) {
			return snap, err
		}
		// ErrExists: another creator won; load theirs. Anything else: retry.
	}
	return nil, fmt.Errorf("manifest: open %s: gave up: %w", path, err)
}

// LoadWithRetry is Load retrying plain failures with the handle's backoff (up to 20
// attempts or until ctx ends); ErrNotExist, corruption, ErrUnsupportedVersion and the
// store's refusals (objectstore.Refused) are returned at once.
func (m *Handle) LoadWithRetry(ctx context.Context) (*Snapshot, error) {
	for attempt := 0; ; attempt++ {
		snap, err := m.Load(ctx)
		if err == nil {
			return snap, nil
		}
		if errors.Is(err, ErrNotExist) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupportedVersion) || objectstore.Refused(err) || ctx.Err() != nil || attempt >= 20 {
			return nil, err
		}
		if serr := m.backoff.Sleep(ctx, attempt); serr != nil {
			return nil, err
		}
	}
}

// stamp increments the write counter and records a fresh write nonce.
func stamp(st *State) ([8]byte, error) {
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nonce, fmt.Errorf("manifest: random nonce: %w", err)
	}
	st.WriteCounter++
	st.RecentWrites = append(st.RecentWrites, nonce)
	if n := len(st.RecentWrites); n > maxRecentWrites {
		st.RecentWrites = slices.Delete(st.RecentWrites, 0, n-maxRecentWrites)
	}
	return nonce, nil
}

// WriteResult is what Write reports: the new snapshot and the write's nonce.
type WriteResult struct {
	Snapshot
	Nonce [8]byte
}

// Write stores st if the manifest is still at version base (If-Match). st must be the
// caller's own copy (see State.Clone): Write seals old entries into segments when the bound
// is exceeded (writing segment objects create-only), increments the write counter and records
// a write nonce, all in st.
//
// Errors: ErrConflict when another write came first; an error matching ErrOutcomeUnknown when
// the write may or may not have taken effect (the nonce identifies it: see Applied); other
// errors did not take effect.
func (m *Handle) Write(ctx context.Context, st *State, base string) (*WriteResult, error) {
	store, path := m.store, m.path
	if base == "" {
		return nil, fmt.Errorf("manifest: write %s: empty base version", path)
	}
	if err := seal(ctx, store, path, st); err != nil {
		return nil, err
	}
	nonce, err := stamp(st)
	if err != nil {
		return nil, err
	}
	info, err := objectstore.PutBytes(ctx, store, path, st.Encode(), objectstore.IfMatch(base))
	switch {
	case err == nil:
		return &WriteResult{Snapshot: Snapshot{State: st, Version: info.Version}, Nonce: nonce}, nil
	case errors.Is(err, objectstore.ErrPreconditionFailed):
		return &WriteResult{Nonce: nonce}, fmt.Errorf("%w: %s: %w", ErrConflict, path, err)
	case errors.Is(err, objectstore.ErrOutcomeUnknown):
		return &WriteResult{Nonce: nonce}, fmt.Errorf("%w: %s: %w", ErrOutcomeUnknown, path, err)
	}
	return &WriteResult{Nonce: nonce}, fmt.Errorf("manifest: write %s: %w", path, err)
}

// Applied reports whether a write with this nonce is among the latest writes recorded in s
// (the last 32). Right after an outcome-unknown write, a fresh read that does not show the
// nonce and is at another version than the write's base means the write never took effect
// and never will (its If-Match names a version that is gone; versions never recur).
func (s *State) Applied(nonce [8]byte) bool {
	return slices.Contains(s.RecentWrites, nonce)
}

// Update is read-modify-write with retries: it loads the manifest, calls fn on a private copy
// of the state, and writes the result conditionally on the version it read. On a conflict it
// waits (jittered exponential backoff), reloads and calls fn again. When a write's outcome is
// unknown it reloads and looks for its write nonce among the manifest's recent writes: if
// found, the write took effect and Update returns the reloaded snapshot (which may include
// later writes of others); otherwise it retries. So fn's change is applied at most once,
// and exactly once when Update returns nil.
//
// fn may return ErrNoChange to skip the write (Update then returns the snapshot read), or
// any other error to abort (returned as is). fn must not keep the *State.
// Update fails with ErrNotExist when there is no manifest, with ErrGenerationChanged
// when the stream is replaced while it runs, and at once with a refusal of the store
// (objectstore.Refused: a missing bucket, refused credentials, no conditional writes).
func (m *Handle) Update(ctx context.Context, fn func(*State) error) (*Snapshot, error) {
	path := m.path
	if err := m.backoff.Validate(); err != nil {
		return nil, fmt.Errorf("manifest: update: %w", err)
	}
	snap, err := m.LoadWithRetry(ctx)
	if err != nil {
		return nil, err
	}
	gen := snap.State.Generation
	// The writes whose outcome was unknown: each one's nonce, and the write counter it would
	// have had. While any is unresolved, every error Update returns matches ErrOutcomeUnknown
	// (the change may be in the manifest).
	type unknownWrite struct {
		nonce   [8]byte
		counter uint64
	}
	var unknown []unknownWrite
	unresolved := func(err error) error {
		if len(unknown) == 0 || errors.Is(err, ErrOutcomeUnknown) {
			return err
		}
		return fmt.Errorf("%w: an earlier write of this update is unresolved: %w", ErrOutcomeUnknown, err)
	}
	var lastErr error
	for attempt := 0; m.maxAttempts <= 0 || attempt < m.maxAttempts; attempt++ {
		if attempt > 0 {
			if err := m.backoff.Sleep(ctx, attempt-1); err != nil {
				return nil, unresolved(fmt.Errorf("manifest: update %s: %w (last error: %w)", path, err, lastErr))
			}
			if snap, err = m.LoadWithRetry(ctx); err != nil {
				return nil, unresolved(err)
			}
			if snap.State.Generation != gen {
				return nil, unresolved(fmt.Errorf("%w: %s", ErrGenerationChanged, path))
			}
			for _, w := range unknown {
				if snap.State.Applied(w.nonce) {
					return snap, nil
				}
			}
			// A nonce not found tells that its write never took effect only while it would
			// still be among the recent writes: after maxRecentWrites later writes it is gone
			// either way, and applying fn again could apply it twice.
			for _, w := range unknown {
				if snap.State.WriteCounter >= w.counter+maxRecentWrites {
					return nil, fmt.Errorf("%w: %s: %d writes since, too many to tell whether it took effect", ErrOutcomeUnknown, path, snap.State.WriteCounter-w.counter)
				}
			}
		}
		st := snap.State.Clone()
		if err := fn(st); err != nil {
			if errors.Is(err, ErrNoChange) {
				return snap, nil
			}
			return nil, err
		}
		res, err := m.Write(ctx, st, snap.Version)
		if err == nil {
			return &res.Snapshot, nil
		}
		if res != nil && errors.Is(err, ErrOutcomeUnknown) {
			unknown = append(unknown, unknownWrite{res.Nonce, snap.State.WriteCounter + 1})
		}
		if ctx.Err() != nil || objectstore.Refused(err) {
			return nil, unresolved(err) // a refused write fails the same way every time
		}
		lastErr = err
	}
	return nil, unresolved(fmt.Errorf("manifest: update %s: gave up after %d attempts: %w", path, m.maxAttempts, lastErr))
}
