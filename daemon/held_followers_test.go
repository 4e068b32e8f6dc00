package daemon_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// sseFollow opens an SSE read session of basin/name from seq_num 0 and sends every data
// line it receives on the returned channel until the test ends.
func (r *running) sseFollow(t testing.TB, basin, name string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", r.base+"/v1/streams/"+name+"/records?seq_num=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("S2-Basin", basin)
	req.Header.Set("Accept", "text/event-stream")
	res, err := r.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		t.Fatalf("SSE read of %s: %d", name, res.StatusCode)
	}
	lines := make(chan string, 64)
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				select {
				case lines <- data:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return lines
}

// waitFor reads lines until one contains want, failing after d.
func waitFor(t testing.TB, lines <-chan string, want string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l := <-lines:
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("%q not delivered within %v", want, d)
		}
	}
}

// TestFollowersOfHeldStreamsDoNotPoll: with --journal the daemon holds the roles of the
// streams its readers follow, so idle followed streams cost the store almost nothing (no
// poll a second each), and a record appended through the daemon still reaches its
// followers at once, with no store read (the committer hands its window's section over).
func TestFollowersOfHeldStreamsDoNotPoll(t *testing.T) {
	const streams = 20
	count := &purposes{n: map[objectstore.Purpose]int{}}
	cfg := testConfig(objectstore.Instrument(objectstore.NewMemStore(), count))
	cfg.Journal, cfg.GC, cfg.LagInterval = true, false, 0
	r := start(t, cfg)
	defer r.stop(t)
	var follows []<-chan string
	for i := 0; i < streams; i++ {
		name := fmt.Sprintf("s%d", i)
		if i == 0 {
			r.create(t, "held-basin", name)
		} else {
			r.createStream(t, "held-basin", name)
		}
		r.appendOne(t, "held-basin", name, "first-"+name)
		follows = append(follows, r.sseFollow(t, "held-basin", name))
	}
	for i, f := range follows {
		waitFor(t, f, fmt.Sprintf("first-s%d", i), 10*time.Second)
	}
	time.Sleep(time.Second) // the watchers' first fast polls
	before := count.get(objectstore.PurposePoll)
	const idle = 3 * time.Second
	time.Sleep(idle)
	polls := count.get(objectstore.PurposePoll) - before
	t.Logf("%d idle followed streams: %d store polls in %v (%d store requests of any purpose since start)", streams, polls, idle, count.total())
	// Without the role held here, each watcher polls once a second at least.
	if polls >= streams {
		t.Fatalf("%d polls in %v for %d idle followed streams: the watchers still poll", polls, idle, streams)
	}
	others := func() int { return count.total() - count.get(objectstore.PurposeCommit) }
	reads := others()
	start := time.Now()
	r.appendOne(t, "held-basin", "s7", "second")
	waitFor(t, follows[7], "second", 5*time.Second)
	t.Logf("a record appended through the daemon reached its follower in %v", time.Since(start))
	// The committer handed the window's section to the stream's watcher, and the record's
	// bytes came from the window it wrote: no store read between the append and delivery.
	if n := others() - reads; n != 0 {
		t.Fatalf("%d store reads to deliver a record appended through the daemon, want 0", n)
	}
}
