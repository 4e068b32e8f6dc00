package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/catalog"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// BasinInfo is what a basin's marker object holds.
type BasinInfo struct {
	Name      string          `json:"name"`
	CreatedAt time.Time       `json:"created_at"`
	Config    json.RawMessage `json:"config,omitempty"` // the API layer's basin config, opaque here
}

// CreateBasin writes the basin's marker, create-only.
func (e *Engine) CreateBasin(ctx context.Context, name string, config json.RawMessage) (BasinInfo, error) {
	if err := stream.ValidateBasinName(name); err != nil {
		return BasinInfo{}, err
	}
	info := BasinInfo{Name: name, CreatedAt: e.cfg.Now().UTC().Truncate(time.Millisecond), Config: config}
	data, err := json.Marshal(info)
	if err != nil {
		return BasinInfo{}, err
	}
	_, err = objectstore.PutBytes(ctx, e.cfg.Store, catalog.BasinMarker(name), data, objectstore.IfAbsent())
	switch {
	case errors.Is(err, objectstore.ErrPreconditionFailed):
		return BasinInfo{}, fmt.Errorf("%w: %q", ErrBasinExists, name)
	case errors.Is(err, objectstore.ErrOutcomeUnknown):
		// Read it back: if the marker holds what we wrote, the create took effect.
		got, gerr := e.Basin(ctx, name)
		if gerr == nil && got.CreatedAt.Equal(info.CreatedAt) && string(got.Config) == string(info.Config) {
			return got, nil
		}
		return BasinInfo{}, err
	case err != nil:
		return BasinInfo{}, err
	}
	return info, nil
}

// Basin reads a basin's marker.
func (e *Engine) Basin(ctx context.Context, name string) (BasinInfo, error) {
	if err := stream.ValidateBasinName(name); err != nil {
		return BasinInfo{}, err
	}
	info, _, err := e.readBasin(ctx, name)
	return info, err
}

// readBasin reads and decodes a basin's marker, with the version it was read at.
func (e *Engine) readBasin(ctx context.Context, name string) (BasinInfo, string, error) {
	key := catalog.BasinMarker(name)
	data, oi, err := objectstore.ReadAll(ctx, e.cfg.Store, key)
	if errors.Is(err, objectstore.ErrNotFound) {
		return BasinInfo{}, "", fmt.Errorf("%w: %q", ErrBasinNotFound, name)
	}
	if err != nil {
		return BasinInfo{}, "", err
	}
	var info BasinInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return BasinInfo{}, "", fmt.Errorf("engine: basin marker %q is corrupt: %w", key, err)
	}
	return info, oi.Version, nil
}

// SetBasinConfig replaces a basin's config, conditionally on the marker's version.
func (e *Engine) SetBasinConfig(ctx context.Context, name string, update func(old json.RawMessage) (json.RawMessage, error)) (BasinInfo, error) {
	key := catalog.BasinMarker(name)
	b := manifest.DefaultBackoff()
	for attempt := 0; ; attempt++ {
		info, version, err := e.readBasin(ctx, name)
		if err != nil {
			return BasinInfo{}, err
		}
		if info.Config, err = update(info.Config); err != nil {
			return BasinInfo{}, err
		}
		out, err := json.Marshal(info)
		if err != nil {
			return BasinInfo{}, err
		}
		_, err = objectstore.PutBytes(ctx, e.cfg.Store, key, out, objectstore.IfMatch(version))
		if err == nil {
			return info, nil
		}
		if !errors.Is(err, objectstore.ErrPreconditionFailed) && !errors.Is(err, objectstore.ErrOutcomeUnknown) {
			return BasinInfo{}, err
		}
		// Lost a race, or don't know: re-read and apply again (the update is idempotent: it
		// sets the config it is given).
		if err := b.Sleep(ctx, attempt); err != nil {
			return BasinInfo{}, err
		}
	}
}

// ListBasins lists basins by name.
func (e *Engine) ListBasins(ctx context.Context, prefix, startAfter string, limit int) ([]BasinInfo, bool, error) {
	names, more, err := catalog.ListBasins(ctx, e.cfg.Store, prefix, startAfter, limit)
	if err != nil {
		return nil, false, err
	}
	out := make([]BasinInfo, 0, len(names))
	for _, n := range names {
		info, err := e.Basin(ctx, n)
		if errors.Is(err, ErrBasinNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, false, err
		}
		out = append(out, info)
	}
	return out, more, nil
}

// DeleteBasin deletes every stream of the basin and then its marker.
func (e *Engine) DeleteBasin(ctx context.Context, name string) error {
	if _, err := e.Basin(ctx, name); err != nil {
		return err
	}
	for {
		streams, more, err := catalog.ListStreams(ctx, e.cfg.Store, name, "", "", 100)
		if err != nil {
			return err
		}
		for _, st := range streams {
			if _, err := e.DeleteStream(ctx, name, st.Name()); err != nil && !errors.Is(err, manifest.ErrNotExist) {
				return err
			}
		}
		if !more {
			break
		}
	}
	return e.cfg.Store.Delete(ctx, catalog.BasinMarker(name))
}

// requireBasin checks that a basin exists (no-op for the root namespace).
func (e *Engine) requireBasin(ctx context.Context, basin string) error {
	if basin == "" {
		return nil
	}
	_, err := e.Basin(ctx, basin)
	return err
}
