package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// version renders the module version, the VCS revision, its time and "modified", and the Go
// version from the build info.
func TestVersionFromBuildInfo(t *testing.T) {
	info := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/sluice-dev/sluice", Version: "v1.2.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2025-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, c := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{info, true, "v1.2.0 (revision 0123456789abcdef0123456789abcdef01234567, 2025-01-02T03:04:05Z, modified; go1.26.8)"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true, "(devel) (no VCS revision; go1.26.8)"},
		{nil, false, "unknown (no build info)"},
	} {
		if got := version(c.info, c.ok); got != c.want {
			t.Errorf("version = %q, want %q", got, c.want)
		}
	}
}

// sluice version and sluice --version print the same line, from the binary's build info.
func TestVersionCommandAndFlag(t *testing.T) {
	dir := t.TempDir()
	cmd := sluiceOK(t, dir, "", nil, "version")
	flag := sluiceOK(t, dir, "", nil, "--version")
	if cmd != flag || !strings.HasPrefix(cmd, "sluice ") || !strings.Contains(cmd, "go1.") || strings.Count(cmd, "\n") != 1 {
		t.Fatalf("sluice version = %q, sluice --version = %q: want one same line with the build info", cmd, flag)
	}
	if r := sluice(t, dir, "", nil, "version", "extra"); r.code == 0 {
		t.Errorf("sluice version extra: exit 0")
	}
}
