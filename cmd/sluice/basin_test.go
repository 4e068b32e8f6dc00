package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// listedInfo is a line of basin list or stream list.
type listedInfo struct {
	Name      string     `json:"name"`
	CreatedAt time.Time  `json:"created_at"`
	DeletedAt *time.Time `json:"deleted_at"`
}

// basinNames returns the names basin list prints, checking each line's created_at.
func basinNames(t *testing.T, c *cli, after time.Time, args ...string) []string {
	t.Helper()
	var names []string
	for _, b := range jsonLines[listedInfo](t, c.ok("", append([]string{"basin", "list"}, args...)...).stdout) {
		if b.CreatedAt.Before(after) || b.CreatedAt.After(time.Now().Add(time.Second)) || b.DeletedAt != nil {
			t.Errorf("basin list: %+v, want created_at after %v and no deleted_at", b, after)
		}
		names = append(names, b.Name)
	}
	return names
}

func TestBasinLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		start := time.Now().Add(-time.Second).Truncate(time.Millisecond)
		if got := basinNames(t, c, start); len(got) != 0 {
			t.Fatalf("basin list of an empty store = %q", got)
		}
		created := decodeJSON[listedInfo](t, c.ok("", "basin", "create", "orders-basin").stdout)
		if created.Name != "orders-basin" || created.CreatedAt.Before(start) || created.DeletedAt != nil {
			t.Fatalf("basin create printed %+v", created)
		}
		c.ok("", "basin", "create", "audit-basin")
		list := jsonLines[listedInfo](t, c.ok("", "basin", "list").stdout)
		if len(list) != 2 || list[0].Name != "audit-basin" || list[1] != created {
			t.Fatalf("basin list = %+v, want audit-basin then %+v", list, created)
		}
		if got := basinNames(t, c, start, "--prefix", "orders"); strings.Join(got, ",") != "orders-basin" {
			t.Fatalf("basin list --prefix orders = %q", got)
		}
		if got := basinNames(t, c, start, "--limit", "1"); strings.Join(got, ",") != "audit-basin" {
			t.Fatalf("basin list --limit 1 = %q", got)
		}
		if got := basinNames(t, c, start, "--start-after", "audit-basin"); strings.Join(got, ",") != "orders-basin" {
			t.Fatalf("basin list --start-after audit-basin = %q", got)
		}

		// A duplicate is refused, and the basin keeps its creation time.
		c.fails("", []string{`basin "orders-basin"`, "already exists"}, "basin", "create", "orders-basin")
		if list := jsonLines[listedInfo](t, c.ok("", "basin", "list", "--prefix", "orders").stdout); len(list) != 1 || list[0] != created {
			t.Fatalf("after a duplicate create, basin list = %+v, want %+v", list, created)
		}

		// Names outside S2's rule are refused, naming the rule, and nothing is made.
		for name, why := range map[string]string{
			"short":                 "must be 8 to 48 characters, is 5",
			"Upper-basin":           `character 'U' at 0`,
			"under_score_bn":        `character '_' at 5`,
			"-leading-dash":         "must not start or end with '-'",
			"trailing-dash-":        "must not start or end with '-'",
			strings.Repeat("a", 49): "is 49",
		} {
			c.fails("", []string{"invalid basin name", why, "lower-case letters, digits and '-'"}, "basin", "create", "--", name)
			c.fails("", []string{"invalid basin name", why}, "basin", "delete", "--", name)
		}
		if got := basinNames(t, c, start); strings.Join(got, ",") != "audit-basin,orders-basin" {
			t.Fatalf("after invalid creates, basin list = %q", got)
		}
		c.fails("", []string{"--limit"}, "basin", "list", "--limit", "-1")

		// Delete takes the basin's streams with it, and leaves the other basins alone.
		c.ok("", "stream", "create", "events", "--basin", "orders-basin")
		c.ok("a\nb\n", "append", "events", "--basin", "orders-basin")
		c.ok("", "stream", "create", "kept", "--basin", "audit-basin")
		c.ok("", "stream", "create", "root-stream")
		del := decodeJSON[map[string]string](t, c.ok("", "basin", "delete", "orders-basin").stdout)
		if del["deleted"] != "orders-basin" {
			t.Fatalf("basin delete printed %v", del)
		}
		if got := basinNames(t, c, start); strings.Join(got, ",") != "audit-basin" {
			t.Fatalf("after delete, basin list = %q", got)
		}
		if out := c.ok("", "stream", "list", "--basin", "orders-basin").stdout; out != "" {
			t.Fatalf("the deleted basin still lists streams: %s", out)
		}
		c.fails("", []string{"does not exist"}, "read", "events", "--basin", "orders-basin")
		for _, args := range [][]string{{"stream", "list", "--basin", "audit-basin"}, {"stream", "list"}} {
			if n := len(jsonLines[listedInfo](t, c.ok("", args...).stdout)); n != 1 {
				t.Fatalf("sluice %v after deleting another basin: %d streams, want 1", args, n)
			}
		}

		// A basin that does not exist (any more) is an error naming it.
		c.fails("", []string{`basin "orders-basin"`, "does not exist"}, "basin", "delete", "orders-basin")
		c.fails("", []string{`basin "never-was-basin"`, "does not exist"}, "basin", "delete", "never-was-basin")

		// Made again, the name is a new, empty basin.
		c.ok("", "basin", "create", "orders-basin")
		if out := c.ok("", "stream", "list", "--basin", "orders-basin").stdout; out != "" {
			t.Fatalf("a basin created again lists the old streams: %s", out)
		}
	})
}

// TestBasinCommandsHonourStoreAndConfig: basin commands work on --store (or SLUICE_STORE),
// take --prefix from a shared config file like stream list, and are not steered by a --basin
// that the environment or the file gives the stream commands.
func TestBasinCommandsHonourStoreAndConfig(t *testing.T) {
	dir := t.TempDir()
	sluiceOK(t, dir, "", nil, "basin", "create", "elsewhere-basin", "--store", "./other")
	if out := sluiceOK(t, dir, "", nil, "basin", "list"); out != "" {
		t.Fatalf("basin list of the default store shows another store's basin: %s", out)
	}
	if out := sluiceOK(t, dir, "", []string{"SLUICE_STORE=./other", "SLUICE_BASIN=unrelated-basin"}, "basin", "list"); !strings.Contains(out, `"elsewhere-basin"`) {
		t.Fatalf("basin list with SLUICE_STORE=./other = %q", out)
	}
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("store: ./other\nbasin: elsewhere-basin\nprefix: zzz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := sluiceOK(t, dir, "", nil, "--config", cfg, "basin", "list"); out != "" {
		t.Fatalf("basin list with prefix: zzz from --config = %q", out)
	}
	if out := sluiceOK(t, dir, "", nil, "--config", cfg, "basin", "list", "--prefix", "else"); !strings.Contains(out, `"elsewhere-basin"`) {
		t.Fatalf("basin list with the store from --config = %q", out)
	}
	// The file's basin key is the stream commands': it reaches the basin made above.
	sluiceOK(t, dir, "", nil, "--config", cfg, "stream", "create", "s")
	if out := sluiceOK(t, dir, "", nil, "stream", "list", "--store", "./other", "--basin", "elsewhere-basin"); !strings.Contains(out, `"s"`) {
		t.Fatalf("stream create with basin from --config did not reach the basin: %q", out)
	}
	sluiceOK(t, dir, "", nil, "--config", cfg, "basin", "delete", "elsewhere-basin")
	if out := sluiceOK(t, dir, "", nil, "basin", "list", "--store", "./other"); out != "" {
		t.Fatalf("after delete, basin list = %q", out)
	}
	// A --store directory that does not exist is a typo for list and delete; create makes it.
	for _, args := range [][]string{{"basin", "list"}, {"basin", "delete", "typo-store-basin"}} {
		if r := sluice(t, dir, "", nil, append(args, "--store", "./typo")...); r.code == 0 || !strings.Contains(r.stderr, "does not exist") {
			t.Errorf("sluice %v --store ./typo: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	sluiceOK(t, dir, "", nil, "basin", "create", "new-store-basin", "--store", "./made")
	if _, err := os.Stat(filepath.Join(dir, "made", "basins", "new-store-basin", "basin")); err != nil {
		t.Fatalf("basin create did not make the store and its marker: %v", err)
	}
}

// TestBasinAndStreamListMatchTheAPI: on one store, basin list and stream list print exactly
// the objects the daemon's list-basins and list-streams answer, whether the CLI or the API
// made them, and a basin deleted by the CLI is gone for the API.
func TestBasinAndStreamListMatchTheAPI(t *testing.T) {
	forEachBackend(t, func(t *testing.T, c *cli) {
		c.ok("", "basin", "create", "cli-made-basin")
		c.ok("", "stream", "create", "from-cli", "--basin", "cli-made-basin")
		base := startServe(t, c.dir, nil, c.b.args...)
		api := apiCaller(t, base, "cli-made-basin")
		if code, body := api("POST", "/v1/basins", `{"basin":"api-made-basin"}`); code != 201 {
			t.Fatalf("POST /v1/basins = %d %s", code, body)
		}
		if code, body := api("POST", "/v1/streams", `{"stream":"from-api"}`); code != 201 {
			t.Fatalf("POST /v1/streams = %d %s", code, body)
		}
		c.ok("", "stream", "create", "later-cli", "--basin", "cli-made-basin")

		same := func(what string, cliOut string, apiBody string, key string) {
			t.Helper()
			var want map[string]json.RawMessage
			var items []map[string]any
			if err := json.Unmarshal([]byte(apiBody), &want); err != nil {
				t.Fatalf("%s: API answer %q: %v", what, apiBody, err)
			}
			if err := json.Unmarshal(want[key], &items); err != nil {
				t.Fatalf("%s: API answer %q: %v", what, apiBody, err)
			}
			got := jsonLines[map[string]any](t, cliOut)
			if len(got) == 0 || !reflect.DeepEqual(got, items) {
				t.Fatalf("%s: CLI printed\n%s\nthe API answers %s", what, cliOut, apiBody)
			}
			for _, o := range got {
				if _, err := time.Parse(time.RFC3339Nano, o["created_at"].(string)); err != nil {
					t.Fatalf("%s: created_at of %v: %v", what, o, err)
				}
			}
		}
		code, body := api("GET", "/v1/basins", "")
		if code != 200 {
			t.Fatalf("GET /v1/basins = %d %s", code, body)
		}
		same("basin list", c.ok("", "basin", "list").stdout, body, "basins")
		code, body = api("GET", "/v1/streams", "")
		if code != 200 || strings.Count(body, `"created_at"`) != 3 {
			t.Fatalf("GET /v1/streams = %d %s", code, body)
		}
		same("stream list", c.ok("", "stream", "list", "--basin", "cli-made-basin").stdout, body, "streams")

		c.ok("", "basin", "delete", "api-made-basin")
		if code, body := api("GET", "/v1/basins", ""); code != 200 || strings.Contains(body, "api-made-basin") {
			t.Fatalf("after basin delete, GET /v1/basins = %d %s", code, body)
		}
		c.ok("", "basin", "delete", "cli-made-basin")
		if code, body := api("GET", "/v1/streams", ""); code != 404 || !strings.Contains(body, "basin_not_found") {
			t.Fatalf("after basin delete, GET /v1/streams = %d %s, want basin_not_found", code, body)
		}
	})
}

func TestBasinHelpIsAccurate(t *testing.T) {
	dir := t.TempDir()
	cases := map[string][]string{
		"":             {"basin"},
		"basin":        {"create", "list", "delete", "--basin", "8 to 48"},
		"basin create": {"NAME", "fails if the basin exists", `"created_at"`},
		"basin list":   {"--prefix", "--start-after", "--limit", `"created_at"`, "GET /v1/basins"},
		"basin delete": {"NAME", "every stream", "cannot be undone", "DELETE /v1/basins"},
		"stream list":  {`"created_at"`, "GET /v1/streams"},
	}
	for sub, wants := range cases {
		args := append(strings.Fields(sub), "--help")
		r := sluice(t, dir, "", nil, args...)
		if r.code != 0 {
			t.Errorf("sluice %v: exit %d: %s", args, r.code, r.stderr)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("sluice %v does not mention %q:\n%s", args, w, r.stdout)
			}
		}
	}
	if r := sluice(t, dir, "", nil, "basin", "create"); r.code == 0 || !strings.Contains(r.stderr, "NAME") {
		t.Errorf("basin create without NAME: exit %d, stderr %q", r.code, r.stderr)
	}
}
