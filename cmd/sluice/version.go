package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version describes the binary from its build info: the module version, then the VCS
// revision, its time and whether the tree had changes, and the Go version
// ("v1.2.0 (revision 0123abcd…, 2025-01-02T03:04:05Z, modified; go1.26.8)").
func version(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "unknown (no build info)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var vcs []string
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if r := settings["vcs.revision"]; r != "" {
		vcs = append(vcs, "revision "+r)
	}
	if t := settings["vcs.time"]; t != "" {
		vcs = append(vcs, t)
	}
	if settings["vcs.modified"] == "true" {
		vcs = append(vcs, "modified")
	}
	if len(vcs) == 0 {
		vcs = append(vcs, "no VCS revision")
	}
	return fmt.Sprintf("%s (%s; %s)", v, strings.Join(vcs, ", "), info.GoVersion)
}

// buildVersion is version of this binary's build info.
func buildVersion() string { return version(debug.ReadBuildInfo()) }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print sluice's version and VCS revision (as --version does)",
		Long: `Print the module version and the VCS revision sluice was built from (with its time, and
"modified" if the tree had uncommitted changes), and the Go version, from the binary's
build info. sluice --version prints the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "sluice "+buildVersion())
			return err
		},
	}
}
