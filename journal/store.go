package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// headRead is how many bytes ReadIndex asks for first: enough for the header and the index
// of a window of a few hundred streams, so most reads are one request.
const headRead = 64 << 10

// ErrFenced: the number a writer wanted is held by a fence; the journal is closed.
var ErrFenced = errors.New("journal: fenced")

// ReadIndex reads the header and index of object key, with one ranged read (two when the
// index is longer than the first read). ErrNotFound (objectstore's) if it does not exist.
func ReadIndex(ctx context.Context, s objectstore.Store, key string) (Header, []IndexRow, error) {
	b, size, err := readRange(ctx, s, key, 0, headRead)
	if err != nil {
		return Header{}, nil, err
	}
	h, err := DecodeHeader(key, b)
	if err != nil {
		return Header{}, nil, err
	}
	if need := HeadSize + int(h.IndexLen); len(b) < need {
		rest, _, err := readRange(ctx, s, key, int64(len(b)), int64(need-len(b)))
		if err != nil {
			return Header{}, nil, err
		}
		b = append(b, rest...)
	}
	return DecodeIndex(key, b, size)
}

// ReadSection reads and checks the section row of object key.
func ReadSection(ctx context.Context, s objectstore.Store, key string, row IndexRow) ([]byte, error) {
	b, _, err := readRange(ctx, s, key, int64(row.Offset), int64(row.Length))
	if err != nil {
		return nil, err
	}
	return row.Section(key, b)
}

func readRange(ctx context.Context, s objectstore.Store, key string, off, n int64) ([]byte, int64, error) {
	obj, err := s.Get(ctx, key, objectstore.GetOptions{Range: &objectstore.ByteRange{Offset: off, Length: n}})
	if err != nil {
		return nil, 0, err
	}
	defer obj.Body.Close()
	b, err := io.ReadAll(io.LimitReader(obj.Body, n))
	if err != nil {
		return nil, 0, err
	}
	return b, obj.Size, nil
}

// Outcome is what a read-back tells a writer whose create-only write of an object had an
// unknown outcome.
type Outcome int

const (
	OutcomeOurs   Outcome = iota + 1 // the object is there with the writer's nonce: durable
	OutcomeAbsent                    // nothing there: write it again, create-only
	OutcomeTheirs                    // another object holds the number (a fence, or another writer)
)

// Resolve reads key back and says whose it is, by the nonce the writer put in its header.
func Resolve(ctx context.Context, s objectstore.Store, key string, nonce [16]byte) (Outcome, error) {
	b, _, err := readRange(ctx, s, key, 0, HeadSize)
	if errors.Is(err, objectstore.ErrNotFound) {
		return OutcomeAbsent, nil
	}
	if err != nil {
		return 0, err
	}
	h, err := DecodeHeader(key, b)
	if err != nil {
		return 0, err
	}
	if h.Nonce == nonce {
		return OutcomeOurs, nil
	}
	return OutcomeTheirs, nil
}

// Delays between the puts of one object after unknown outcomes that left nothing: doubling
// from rewriteDelay up to maxRewriteDelay. A caller bounds the whole by ctx.
const (
	rewriteDelay    = 10 * time.Millisecond
	maxRewriteDelay = time.Second
)

// Write puts obj (encoded with header h) create-only at its key and settles an unknown
// outcome by reading it back. It returns nil once the object is durable, ErrFenced when a
// fence holds the number, and objectstore.ErrPreconditionFailed when another window does (a
// second writer on the same journal: a bug in the caller).
func Write(ctx context.Context, s objectstore.Store, h Header, obj []byte) error {
	key := Key(h.Journal, h.Number)
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			// A put again after an unknown outcome that left nothing: never in a tight loop.
			t := time.NewTimer(min(rewriteDelay<<min(attempt-1, 10), maxRewriteDelay))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		_, err := s.Put(ctx, key, bytes.NewReader(obj), int64(len(obj)), objectstore.IfAbsent())
		if err == nil {
			return nil
		}
		if !errors.Is(err, objectstore.ErrOutcomeUnknown) && !errors.Is(err, objectstore.ErrPreconditionFailed) {
			return err
		}
		out, rerr := Resolve(ctx, s, key, h.Nonce)
		if rerr != nil {
			return fmt.Errorf("journal: settling the write of %s: %w (after %w)", key, rerr, err)
		}
		switch out {
		case OutcomeOurs:
			return nil
		case OutcomeAbsent:
			if errors.Is(err, objectstore.ErrPreconditionFailed) {
				// It was there when we wrote and is gone now: only a collector deletes
				// journal objects, and never one this new.
				return fmt.Errorf("journal: %s existed and then vanished: %w", key, objectstore.ErrInconsistent)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			continue // nothing landed: write again, create-only
		}
		other, _, rerr := ReadIndex(ctx, s, key)
		if rerr != nil {
			return fmt.Errorf("journal: reading the object that holds %s: %w", key, rerr)
		}
		if other.Kind == KindFence {
			return fmt.Errorf("%w: %s", ErrFenced, key)
		}
		return fmt.Errorf("journal: %s holds another writer's window: %w", key, objectstore.ErrPreconditionFailed)
	}
}
