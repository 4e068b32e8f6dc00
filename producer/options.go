package producer

import "time"

// AppendOption modifies one Append or AppendSync call.
type AppendOption func(*appendOptions)

type appendOptions struct {
	chain *Chain    // WithChain
	since time.Time // ReceivedAt; zero: the Append call

	// Internal: Close's last Submit batch may be appended while closing (draining); Submit's
	// records carry the expiry count when they were accepted (epoch).
	draining bool
	epoch    *uint64
}

// WithChain makes the append part of chain c (see Chain). If c's last append went to
// another producer, Append first waits (within ctx) until it has resolved; it fails at once
// with manifest.ErrPrecedingAppendFailed once an append of c has failed. A nil c is no
// chain.
func WithChain(c *Chain) AppendOption {
	return func(o *appendOptions) { o.chain = c }
}

// ReceivedAt says when the caller received the append, for Config.DeliveryTimeout, which
// then counts from t rather than from the Append call (the daemon passes a request's
// arrival). It has no effect without a DeliveryTimeout.
func ReceivedAt(t time.Time) AppendOption {
	return func(o *appendOptions) { o.since = t }
}
