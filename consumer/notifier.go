package consumer

import "sync"

// Notifier lets a producer in the same process wake the followers of a stream at once,
// instead of leaving them to their next poll. The server creates one, gives it to its readers
// (Config.Notifier) and calls Notify(manifestPath) after every acknowledged append.
//
// A notification only says "look again": followers still read the manifest (a conditional
// GET) to learn what changed, so spurious or lost notifications cost latency, never
// correctness. Keys are manifest paths; readers of different stores sharing one Notifier
// merely wake each other spuriously. The zero value is not usable: call NewNotifier.
type Notifier struct {
	mu      sync.Mutex
	waiters map[string]chan struct{}
}

// NewNotifier returns an empty notifier.
func NewNotifier() *Notifier { return &Notifier{waiters: map[string]chan struct{}{}} }

// Wait returns a channel closed by the next Notify of manifestPath. Take it before checking
// the manifest, so that a notification between the check and the wait is not missed.
func (n *Notifier) Wait(manifestPath string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.waiters[manifestPath]
	if !ok {
		ch = make(chan struct{})
		n.waiters[manifestPath] = ch
	}
	return ch
}

// Notify wakes every follower of manifestPath waiting now.
func (n *Notifier) Notify(manifestPath string) {
	n.mu.Lock()
	ch, ok := n.waiters[manifestPath]
	delete(n.waiters, manifestPath)
	n.mu.Unlock()
	if ok {
		close(ch)
	}
}
