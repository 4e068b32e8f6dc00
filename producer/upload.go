package producer

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/stream"
)

// errExpired stops the upload of a batch that was resolved meanwhile (DeliveryTimeout).
var errExpired = errors.New("producer: batch expired")

// uploadLoop is one uploader: it takes sealed batches, encodes and stores them, and hands
// them to the commit loop.
func (p *Producer) uploadLoop() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		var b *batch
		if len(p.toUpload) > 0 {
			b = p.toUpload[0]
			p.toUpload[0] = nil
			p.toUpload = p.toUpload[1:]
			b.to(stateUploading)
		}
		p.mu.Unlock()
		if b == nil {
			select {
			case <-p.kick.upload:
				continue
			case <-p.ctx.Done():
				return
			}
		}
		if !p.encode(b) {
			continue
		}
		var err error
		if p.c.client.CanCarry() {
			// A journal committer in this process takes the bytes with the commit: no upload
			// (the commit loop uploads it if the route changes before then).
			b.uploadStart = time.Now()
		} else {
			err = p.upload(b)
		}
		if errors.Is(err, errExpired) {
			continue
		} else if err != nil {
			return // stopping; Close fails the tickets
		}
		p.mu.Lock()
		if b.state == stateUploading {
			b.to(stateUploaded)
		}
		p.mu.Unlock()
		p.kick.wake(p.kick.commit)
	}
}

// encode finishes b's object. It cannot fail for validated appends within FlushSizeBytes; if
// it does, the producer fails loudly rather than hang.
func (p *Producer) encode(b *batch) bool {
	data, err := b.enc.Finish()
	if err != nil {
		p.log.Error("encode batch", "batch", b.num, "err", err)
		p.mu.Lock()
		p.failUnwrittenLocked(fmt.Errorf("producer: encode batch %d: %w", b.num, err))
		p.mu.Unlock()
		return false
	}
	b.data = data // aliases b.enc's buffer until recycleLocked
	return true
}

// upload stores b.data create-only under a fresh key, retrying (each attempt under a new
// key, so that an attempt with an unknown outcome is never mistaken for another) until it
// succeeds, the producer stops, or b is resolved meanwhile (errExpired).
func (p *Producer) upload(b *batch) error {
	for attempt := 0; ; attempt++ {
		start := time.Now()
		key := p.cfg.Stream.BatchKey(stream.BatchName{UnixMilli: p.cfg.Now().UnixMilli(), Random: randomUint64()})
		_, err := objectstore.PutBytes(p.ctx, p.store, key, b.data, objectstore.IfAbsent())
		if err == nil {
			b.key, b.uploadStart = key, start
			p.m.batches.Inc()
			p.m.uploadBytes.Add(float64(len(b.data)))
			return nil
		}
		if p.ctx.Err() != nil {
			return p.ctx.Err()
		}
		p.m.uploadErrors.Inc()
		if errors.Is(err, objectstore.ErrConditionsUnsupported) {
			// The server ignores conditional writes, which the store now refuses for good:
			// nothing can be committed. A write in flight is the commit loop's to resolve.
			p.mu.Lock()
			p.failUnwrittenLocked(fmt.Errorf("producer: %w", err))
			p.mu.Unlock()
			return err
		}
		p.mu.Lock()
		b.lastErr = err
		p.mu.Unlock()
		p.logRetry("upload failed, retrying", err, "batch", b.num, "key", key, "attempt", attempt)
		if err := p.cfg.Backoff.Sleep(p.ctx, attempt); err != nil {
			return err
		}
		p.mu.Lock()
		resolved := b.state == stateResolved
		p.mu.Unlock()
		if resolved {
			return errExpired
		}
	}
}

// uploadCarried uploads the group's batches that were kept for a journal committer in the
// process (batch.carried) when the next commit goes another way. It returns false when the
// producer stops or a batch was resolved meanwhile.
func (p *Producer) uploadCarried(group []*batch) bool {
	if p.c.client.CanCarry() {
		return true
	}
	return p.uploadAll(group)
}

// uploadAll uploads every carried batch of the group, before a direct write (which names
// objects): the route may have changed since uploadCarried looked.
func (p *Producer) uploadAll(group []*batch) bool {
	for _, b := range group {
		if b.carried() {
			if err := p.upload(b); err != nil {
				return false
			}
		}
	}
	return true
}
