package main

import (
	"os"
	"path/filepath"
	"testing"
)

// append --delivery-timeout: a store that keeps refusing the uploads (here a file where the
// stream's data directory belongs) stops the command with exit 1 once an append has waited
// that long, naming the delivery timeout and the store's error, and no ack is printed;
// nothing of the failed appends is in the stream once the store is repaired.
func TestAppendDeliveryTimeoutStops(t *testing.T) {
	c := newCLI(t, backend{name: "file"})
	c.ok("", "stream", "create", "s")
	c.ok("first\n", "append", "s")
	data := filepath.Join(c.dir, "sluice-data", "streams", "s", "data")
	if err := os.Rename(data, data+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := c.fails("second\nthird\n", []string{"delivery timeout", "not stored within 1s", "key conflicts"}, "append", "s", "--delivery-timeout", "1s")
	if r.stdout != "" {
		t.Errorf("append whose uploads fail printed acks: %q", r.stdout)
	}
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(data+".aside", data); err != nil {
		t.Fatal(err)
	}
	if r := c.ok("", "read", "s", "--format", "raw"); r.stdout != "first\n" {
		t.Errorf("stream after the failed append: %q, want only \"first\\n\"", r.stdout)
	}
	c.fails("", []string{"--delivery-timeout"}, "append", "s", "--delivery-timeout", "-1s")
}
