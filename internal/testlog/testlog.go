// Package testlog gives tests a log destination that goroutines may write to while the
// test reads it. It is for tests only.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writes and reads. The zero value is empty
// and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
