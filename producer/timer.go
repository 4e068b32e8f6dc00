package producer

import "time"

// timerLoop runs step on every kick and whenever the time step last asked for has passed,
// until the producer stops; step returns how long until it wants to run again (0: only on
// a kick).
func (p *Producer) timerLoop(kick <-chan struct{}, step func() time.Duration) {
	defer p.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-p.ctx.Done():
			timer.Stop()
			return
		case <-kick:
		case <-timer.C:
		}
		if d := step(); d > 0 {
			timer.Reset(d)
		}
	}
}

// lingerLoop seals the open batch FlushInterval after it opened.
func (p *Producer) lingerLoop() {
	p.timerLoop(p.kick.linger, func() time.Duration {
		p.mu.Lock()
		defer p.mu.Unlock()
		if b := p.open; b != nil {
			if wait := p.cfg.FlushInterval - time.Since(b.opened); wait > 0 {
				return wait
			}
			p.sealLocked()
		}
		return 0
	})
}
