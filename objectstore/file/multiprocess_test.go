//go:build unix

package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/objectstore/file"
)

const (
	envCASChild = "SLUICE_FILESTORE_CAS_CHILD"
	casKey      = "counter"
)

func TestFileSharedDirectory(t *testing.T) {
	// Two stores on one directory see each other's writes and conditions.
	dir := t.TempDir()
	a, b := newFileStore(t, dir), newFileStore(t, dir)
	ctx := context.Background()
	v, err := objectstore.PutBytes(ctx, a, "k", []byte("1"), objectstore.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, b, "k", []byte("2"), objectstore.IfAbsent()); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("create-only through the second store: %v", err)
	}
	if _, err := objectstore.PutBytes(ctx, b, "k", []byte("2"), objectstore.IfMatch(v.Version)); err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.PutBytes(ctx, a, "k", []byte("3"), objectstore.IfMatch(v.Version)); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("stale if-match through the first store: %v", err)
	}
}

// TestFileMultiProcessCAS runs several OS processes (this test binary, re-executed) that each
// increment one counter object with If-Match and retry; no increment may be lost.
func TestFileMultiProcessCAS(t *testing.T) {
	if os.Getenv(envCASChild) != "" {
		return // the child's work happens in TestMain-free fashion below
	}
	const procs, increments = 4, 40
	dir := t.TempDir()
	s := newFileStore(t, dir)
	ctx := context.Background()
	if _, err := objectstore.PutBytes(ctx, s, casKey, []byte("0"), objectstore.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	cmds := make([]*exec.Cmd, procs)
	outs := make([]strings.Builder, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFileCASChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envCASChild+"="+dir, "SLUICE_CAS_INCREMENTS="+strconv.Itoa(increments))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, outs[i].String())
		}
	}
	if t.Failed() {
		return
	}
	data, _, err := objectstore.ReadAll(ctx, s, casKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), strconv.Itoa(procs*increments); got != want {
		t.Fatalf("counter is %s after %d processes x %d increments, want %s", got, procs, increments, want)
	}
	for i := range outs {
		t.Logf("child %d: %s", i, strings.TrimSpace(outs[i].String()))
		if !strings.Contains(outs[i].String(), "cas-child-done") {
			t.Fatalf("child %d did not report completion:\n%s", i, outs[i].String())
		}
	}
}

// TestFileCASChild is the child half of TestFileMultiProcessCAS; it does nothing unless started
// by it.
func TestFileCASChild(t *testing.T) {
	dir := os.Getenv(envCASChild)
	if dir == "" {
		t.Skip("child process of TestFileMultiProcessCAS only")
	}
	n, err := strconv.Atoi(os.Getenv("SLUICE_CAS_INCREMENTS"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	conflicts := 0
	for done := 0; done < n; {
		data, info, err := objectstore.ReadAll(ctx, s, casKey)
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.Atoi(string(data))
		if err != nil {
			t.Fatalf("counter holds %q: %v", data, err)
		}
		_, err = objectstore.PutBytes(ctx, s, casKey, []byte(strconv.Itoa(v+1)), objectstore.IfMatch(info.Version))
		switch {
		case err == nil:
			done++
		case errors.Is(err, objectstore.ErrPreconditionFailed):
			conflicts++
		default:
			t.Fatal(err)
		}
	}
	fmt.Printf("cas-child-done pid %d conflicts %d\n", os.Getpid(), conflicts)
}
