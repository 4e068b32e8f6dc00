package producer

import "github.com/sluice-dev/sluice/batchfmt"

// encoderLocked returns an empty encoder for a new batch, a recycled one if there is one,
// with room for a batch of the recent peak size and an eighth more. A batch's buffer then
// seldom grows while it fills: growing from 64 KiB to the tens of MiB that FlushInterval
// gathers at full speed copies the batch some four times over.
func (p *Producer) encoderLocked() *batchfmt.Encoder {
	var enc *batchfmt.Encoder
	if n := len(p.freeEnc); n > 0 {
		enc, p.freeEnc = p.freeEnc[n-1], p.freeEnc[:n-1]
		p.freeBytes -= int64(enc.Cap())
		enc.Reset()
	} else {
		enc = batchfmt.NewEncoder(p.cfg.BatchCompression)
	}
	enc.Grow(p.batchSize + p.batchSize/8)
	return enc
}

// recycleLocked keeps a committed batch's encoder for reuse, while the kept encoders' buffers
// stay within MaxInFlightBytes: one manifest write may commit many batches at once, and at
// full speed each new batch would otherwise start from a fresh buffer. Only the commit loop
// calls it, for batches it resolved from a manifest: no uploader holds their bytes any more.
func (p *Producer) recycleLocked(b *batch) {
	if b.enc != nil && !p.closing {
		if c := int64(b.enc.Cap()); p.freeBytes+c <= p.cfg.MaxInFlightBytes {
			p.freeEnc = append(p.freeEnc, b.enc)
			p.freeBytes += c
		}
	}
	b.enc, b.data = nil, nil
}
