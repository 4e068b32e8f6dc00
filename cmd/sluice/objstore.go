package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/objectstore/storeurl"
)

// The flags Thanos (and Loki, Mimir, Cortex) take their bucket from: an operator's existing
// bucket YAML opens the same bucket in sluice, instead of a store URL.
const (
	objstoreConfigFileFlag = "objstore.config-file"
	objstoreConfigFlag     = "objstore.config"
)

// addObjstoreFlags adds --objstore.config-file and --objstore.config to root, for every
// command. Either one replaces --store: setting it (on the command line, in the environment
// or in the --config file) makes the store the bucket the YAML names, and the three exclude
// each other, and exclude --endpoint (a daemon has its own store).
func addObjstoreFlags(root *cobra.Command, g *globals) {
	pf := root.PersistentFlags()
	pf.Var(&objstoreValue{g: g, file: true}, objstoreConfigFileFlag,
		"Thanos bucket config file (type: S3|GCS|AZURE|FILESYSTEM, config:, prefix:), instead of --store")
	pf.Var(&objstoreValue{g: g}, objstoreConfigFlag,
		"Thanos bucket config as YAML, instead of --store and --"+objstoreConfigFileFlag)
	root.MarkFlagsMutuallyExclusive("store", objstoreConfigFileFlag, objstoreConfigFlag)
	// A daemon has its own store.
	root.MarkFlagsMutuallyExclusive("endpoint", objstoreConfigFileFlag)
	root.MarkFlagsMutuallyExclusive("endpoint", objstoreConfigFlag)
}

// objstoreValue is a Thanos bucket config flag. Setting it parses the YAML (with
// thanos-io/objstore's config types, so a bad or unsupported config is refused where it
// was given) and points the global store at it.
type objstoreValue struct {
	g    *globals
	file bool
	raw  string // the path or the YAML as given
}

func (v *objstoreValue) String() string {
	if v.file || v.raw == "" {
		return v.raw
	}
	return "<YAML>" // it may hold keys
}

func (v *objstoreValue) Type() string {
	if v.file {
		return "file"
	}
	return "yaml"
}

func (v *objstoreValue) Set(s string) error {
	data := []byte(s)
	if v.file {
		b, err := os.ReadFile(s)
		if err != nil {
			return err
		}
		data = b
	}
	u, err := storeurl.ThanosURL(data)
	if err != nil {
		return err
	}
	v.raw = s
	v.g.store = u
	return nil
}
