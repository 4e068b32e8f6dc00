package main

import (
	"strings"
	"testing"
)

// TestReadRawCountsPrintedRecords: --format raw leaves command records out of the read, so
// --count (and --bytes) count the records it prints: "--count 2" after a fence printed one
// line when the read kept the fence and raw hid it.
func TestReadRawCountsPrintedRecords(t *testing.T) {
	dir := t.TempDir()
	run := func(stdin string, args ...string) string {
		t.Helper()
		return sluiceOK(t, dir, stdin, nil, args...)
	}
	run("a\n", "append", "s", "--create")
	run("", "fence", "s", "token-1")
	run("b\nc\n", "append", "s", "--fencing-token", "token-1")
	if out := run("", "read", "s", "--format", "raw", "--count", "2"); out != "a\nb\n" {
		t.Errorf("read --format raw --count 2 = %q, want two data lines \"a\\nb\\n\" (the hidden fence was counted)", out)
	}
}

// TestHelpCompletion: the help command completes command names ("sluice help st<TAB>" ->
// stream), as cobra's does; a replacement without its completion offered nothing.
func TestHelpCompletion(t *testing.T) {
	dir := t.TempDir()
	r := sluice(t, dir, "", nil, "__complete", "help", "st")
	if r.code != 0 || !strings.Contains(r.stdout, "stream") {
		t.Errorf("sluice __complete help st: exit %d, stdout %q, want the stream command offered", r.code, r.stdout)
	}
	r = sluice(t, dir, "", nil, "__complete", "help", "stream", "")
	if !strings.Contains(r.stdout, "create") {
		t.Errorf("sluice __complete help stream '': stdout %q, want stream's subcommands offered", r.stdout)
	}
}

// TestRetentionInfiniteFalseTakesWeakerAge: "--retention-infinite=false --retention-age D"
// is accepted on one command line, and a retention age from SLUICE_RETENTION_AGE (or the
// file) completes a --retention-infinite=false given alone: a boolean flag set to false
// does not exclude the others of its group from weaker levels. (stream create: stream
// config takes its settings from the command line only.)
func TestRetentionInfiniteFalseTakesWeakerAge(t *testing.T) {
	dir := t.TempDir()
	r := sluice(t, dir, "", []string{"SLUICE_RETENTION_AGE=2d"}, "stream", "create", "s", "--retention-infinite=false")
	if r.code != 0 || !strings.Contains(r.stdout, `"age": 172800`) {
		t.Errorf("SLUICE_RETENTION_AGE=2d with --retention-infinite=false: exit %d, stdout %q, stderr %q, want age 2d", r.code, r.stdout, r.stderr)
	}
}
