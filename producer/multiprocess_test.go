package producer

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/storetest"
	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

const (
	childStoreEnv = "SLUICE_PRODUCER_CHILD_STORE"
	childOutEnv   = "SLUICE_PRODUCER_CHILD_OUT"
	childIDEnv    = "SLUICE_PRODUCER_CHILD_ID"
	childAppends  = 60
)

// TestMultiProcess runs producers in separate OS processes (this test binary, re-executed)
// against one stream on a file store, and on the S3 server when SLUICE_TEST_S3_URL is set,
// then checks the invariants on what they acknowledged.
func TestMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Run("file", func(t *testing.T) {
		runProcesses(t, "file://"+t.TempDir())
	})
	t.Run("s3", func(t *testing.T) {
		raw := os.Getenv("SLUICE_TEST_S3_URL")
		if raw == "" {
			if os.Getenv("CI") == "true" {
				t.Fatal("SLUICE_TEST_S3_URL is not set")
			}
			t.Skip("SLUICE_TEST_S3_URL not set")
		}
		storetest.S3(t) // creates the bucket if needed
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + fmt.Sprintf("/producer-mp-%d", time.Now().UnixNano())
		runProcesses(t, u.String())
		store, err := storeurl.Open(context.Background(), u.String())
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		ctx := context.Background()
		if err := objectstore.ListAll(ctx, store, "", func(o objectstore.ObjectInfo) error { return store.Delete(ctx, o.Key) }); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

func runProcesses(t *testing.T, storeURL string) {
	const children = 3
	outDir := t.TempDir()
	cmds := make([]*exec.Cmd, children)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMultiProcessChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), childStoreEnv+"="+storeURL, childOutEnv+"="+filepath.Join(outDir, fmt.Sprintf("acks-%d", i)), childIDEnv+"="+strconv.Itoa(i))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	var acked []ackedAppend
	maybe := map[string]bool{}
	for i := range children {
		f, err := os.Open(filepath.Join(outDir, fmt.Sprintf("acks-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var a ackedAppend
			var bodies string
			if _, err := fmt.Sscanf(sc.Text(), "%d %d %d %d %d %d %s", &a.ack.Start.SeqNum, &a.ack.Start.Timestamp, &a.ack.End.SeqNum, &a.ack.End.Timestamp,
				&a.ack.Tail.SeqNum, &a.ack.Tail.Timestamp, &bodies); err != nil {
				t.Fatalf("child %d output %q: %v", i, sc.Text(), err)
			}
			a.bodies = strings.Split(bodies, ",")
			for _, b := range a.bodies {
				maybe[b] = true
			}
			acked = append(acked, a)
		}
		f.Close()
	}
	if len(acked) != children*childAppends {
		t.Fatalf("%d acks, want %d", len(acked), children*childAppends)
	}
	store, err := storeurl.Open(context.Background(), storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	recs, st := readStream(t, store, "ingest/manifest")
	verify(t, recs, acked, nil, maybe)
	if len(recs) != len(maybe) {
		t.Fatalf("%d records in the stream, %d acked", len(recs), len(maybe))
	}
	t.Logf("%d processes: %d records, %d entries, %d producers in the table", children, len(recs), len(st.Entries), len(st.Producers))
}

// TestMultiProcessChild is the child side of TestMultiProcess; it does nothing unless run by it.
func TestMultiProcessChild(t *testing.T) {
	storeURL := os.Getenv(childStoreEnv)
	if storeURL == "" {
		t.Skip("only run as a child of TestMultiProcess")
	}
	id := os.Getenv(childIDEnv)
	ctx := context.Background()
	store, err := storeurl.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := testConfig(store)
	cfg.FlushInterval = FlushEveryAppend // every append its own batch object
	cfg.MaxGroupBatches = 4
	p := newProducer(t, cfg)
	tickets := make([]*Ticket, childAppends)
	bodies := make([][]string, childAppends)
	for a := range childAppends {
		n := 1 + a%3
		for r := range n {
			bodies[a] = append(bodies[a], fmt.Sprintf("c%s-a%d-r%d", id, a, r))
		}
		tickets[a], err = p.Append(ctx, batchfmt.AppendInput{Records: bodyRecs(bodies[a]...)})
		if err != nil {
			t.Fatal(err)
		}
	}
	out, err := os.Create(os.Getenv(childOutEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for a, tk := range tickets {
		ack, err := tk.Wait(ctx)
		if err != nil {
			t.Fatalf("append %d: %v", a, err)
		}
		fmt.Fprintf(out, "%d %d %d %d %d %d %s\n", ack.Start.SeqNum, ack.Start.Timestamp, ack.End.SeqNum, ack.End.Timestamp,
			ack.Tail.SeqNum, ack.Tail.Timestamp, strings.Join(bodies[a], ","))
	}
	closeProducer(t, p)
}
