package objectstore

// WriteLimiter is implemented by a store whose writes to one key are limited in rate by the
// service: Google Cloud Storage takes about one write per second to one object name, S3
// about fifteen conditional writes per second to one key, Azure Blob Storage far more. A
// writer that rewrites one key over and over (a stream's manifest) paces its writes to the
// limit, so that it batches what arrives meanwhile instead of being throttled; a store that
// does not implement it states no limit.
type WriteLimiter interface {
	// KeyWritesPerSecond returns how many writes per second one key sustains, > 0.
	KeyWritesPerSecond() float64
}

// KeyWritesPerSecond returns s's limit per key when s states one (it or, through
// Unwrap() Store, a store it wraps), and 0 (none) otherwise.
func KeyWritesPerSecond(s Store) float64 {
	for s != nil {
		if l, ok := s.(WriteLimiter); ok {
			return l.KeyWritesPerSecond()
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return 0
		}
		s = u.Unwrap()
	}
	return 0
}
