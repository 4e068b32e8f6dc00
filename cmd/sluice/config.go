package main

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

// envPrefix is the prefix of the environment variables that set flags.
const envPrefix = "SLUICE_"

// envName is the environment variable for a flag: "-" and "." become "_", so that a shell
// can set it (--objstore.config-file is SLUICE_OBJSTORE_CONFIG_FILE).
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(flag))
}

// applyConfig fills every flag of cmd that was not given on the command line (and is not
// marked command-line only) from the environment, then from the YAML config file. Errors name the flag and where the bad value came
// from.
func applyConfig(cmd *cobra.Command) error {
	fileVals := map[string]yaml.Node{}
	path, _ := cmd.Flags().GetString("config")
	if path == "" {
		path = os.Getenv(envName("config"))
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		if err := yaml.Unmarshal(data, &fileVals); err != nil {
			return fmt.Errorf("--config %s: not a YAML map of flag names to values: %w", path, err)
		}
		for k := range fileVals {
			if cmd.Flags().Lookup(k) == nil && !knownElsewhere(cmd, k) {
				return fmt.Errorf("--config %s: unknown key %q (keys are flag names, e.g. store, listen)", path, k)
			}
		}
	}
	// Two passes, so that the precedence holds across flags that exclude each other too: a
	// flag given on the command line keeps the others of its group from taking a value from
	// the environment or the file, and one set from the environment keeps them from taking
	// one from the file.
	var errs []string
	set := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { set[f.Name] = excludes(f) })
	skip := func(f *pflag.Flag) bool {
		return f.Changed || f.Name == "config" || f.Name == "help" || excludedBy(f, set) || f.Annotations[cmdLineOnlyAnnotation] != nil
	}
	var fromEnv []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if skip(f) {
			return
		}
		// An empty variable counts as unset (as SLUICE_CONFIG's does): a deployment's
		// template that leaves a value blank should not override the file or the default.
		if v := os.Getenv(envName(f.Name)); v != "" {
			if err := cmd.Flags().Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Sprintf("invalid value %q for --%s (from %s): %v", v, f.Name, envName(f.Name), err))
			}
			fromEnv = append(fromEnv, f.Name)
		}
	})
	for _, name := range fromEnv {
		set[name] = excludes(cmd.Flags().Lookup(name))
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if skip(f) {
			return
		}
		if v, ok := fileVals[f.Name]; ok {
			s, err := yamlScalar(&v)
			if err != nil {
				errs = append(errs, fmt.Sprintf("invalid value for --%s (from --config %s, line %d): %v", f.Name, path, v.Line, err))
			} else if err := cmd.Flags().Set(f.Name, s); err != nil {
				errs = append(errs, fmt.Sprintf("invalid value %q for --%s (from --config %s): %v", s, f.Name, path, err))
			}
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// excludes reports whether f, once set, keeps the other flags of its groups from weaker
// levels: a boolean set to false does not (--retention-infinite=false asks for the
// --retention-age that the environment or the file may give).
func excludes(f *pflag.Flag) bool {
	return f.Value.Type() != "bool" || f.Value.String() != "false"
}

// cmdLineOnlyAnnotation marks flags that take a value from the command line only, never from
// the environment or the --config file (see markCmdLineOnly).
const cmdLineOnlyAnnotation = "sluice_cmdline_only"

// markCmdLineOnly makes the named flags of cmd take values from the command line only: flags
// whose mere presence makes the command write (stream config's settings), which a shared
// environment or config file must not turn on.
func markCmdLineOnly(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		f := cmd.Flags().Lookup(n)
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[cmdLineOnlyAnnotation] = []string{"true"}
	}
}

// exclusiveAnnotation marks flags that exclude each other where the command reports the
// conflict itself, in its own words, instead of cobra's MarkFlagsMutuallyExclusive.
const exclusiveAnnotation = "sluice_exclusive"

// markExclusive records that the named flags of cmd exclude each other, for applyConfig's
// precedence (see excludedBy); the command checks the conflict itself.
func markExclusive(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		f := cmd.Flags().Lookup(n)
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[exclusiveAnnotation] = append(f.Annotations[exclusiveAnnotation], strings.Join(names, " "))
	}
}

// excludedBy reports whether a flag already set at a stronger level (the command line, then
// the environment) is mutually exclusive with f (cobra's MarkFlagsMutuallyExclusive, such as
// read's start positions, or markExclusive): the stronger level wins, so f takes no value
// from a weaker one.
func excludedBy(f *pflag.Flag, set map[string]bool) bool {
	groups := slices.Concat(f.Annotations["cobra_annotation_mutually_exclusive"], f.Annotations[exclusiveAnnotation])
	for _, group := range groups {
		for _, name := range strings.Fields(group) {
			if name != f.Name && set[name] {
				return true
			}
		}
	}
	return false
}

// knownElsewhere reports whether a config-file key is a flag of some command, so one file can
// serve every command.
func knownElsewhere(cmd *cobra.Command, key string) bool {
	root := cmd.Root()
	found := false
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup(key) != nil || c.PersistentFlags().Lookup(key) != nil {
			found = true
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return found
}

// yamlScalar returns a config file value as the flag's text: a scalar as it is written in
// the file (YAML would read fencing-token: 0123 as the number 123, and prefix: 1e3 as 1000),
// a list as its items joined by commas.
func yamlScalar(n *yaml.Node) (string, error) {
	scalar := func(n *yaml.Node) (string, error) {
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			return "", fmt.Errorf("expected a scalar or a list, got %s", nodeKind(n))
		}
		return n.Value, nil
	}
	if n.Kind != yaml.SequenceNode {
		return scalar(n)
	}
	parts := make([]string, len(n.Content))
	for i, e := range n.Content {
		v, err := scalar(e)
		if err != nil {
			return "", fmt.Errorf("list item %d: %w", i+1, err)
		}
		parts[i] = v
	}
	return strings.Join(parts, ","), nil
}

func nodeKind(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a map"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Tag == "!!null":
		return "null"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	}
	return "a " + n.Tag
}

// newLogger builds the process logger from --log-level and --log-format.
func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("invalid value %q for --log-level: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	default:
		return nil, fmt.Errorf("invalid value %q for --log-format: want text or json", format)
	}
}

// redactURL hides credentials that a store URL might carry (user info, or query parameters
// whose names suggest secrets), so that URLs can be logged.
func redactURL(raw string) string { return storeurl.Redact(raw) }

// enumValue is a string flag that accepts only the listed values, so that a bad value is
// refused when it is set, wherever it came from (flag, environment or config file).
type enumValue struct {
	val     *string
	allowed []string
}

func newEnum(p *string, def string, allowed ...string) *enumValue {
	*p = def
	return &enumValue{val: p, allowed: allowed}
}

func (e *enumValue) String() string { return *e.val }
func (e *enumValue) Type() string   { return "string" }
func (e *enumValue) Set(s string) error {
	for _, a := range e.allowed {
		if s == a {
			*e.val = s
			return nil
		}
	}
	return fmt.Errorf("want one of %s", strings.Join(e.allowed, ", "))
}

// storeURL accepts file://./relative/dir, the documented default, by turning it into the
// plain relative path that storeurl.Open takes.
func storeURL(raw string) string {
	if rest, ok := strings.CutPrefix(raw, "file://./"); ok {
		return "./" + rest
	}
	return raw
}
