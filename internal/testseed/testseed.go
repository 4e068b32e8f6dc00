// Package testseed gives randomized tests their seed, one way everywhere: the seed in
// SLUICE_SEED when it is set (to replay a failure), else a fresh one, logged either way
// with the line that replays it. It is for tests only.
package testseed

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// Env is the variable that replays a seed: SLUICE_SEED=N go test ./pkg -run TestName.
const Env = "SLUICE_SEED"

// Get returns t's seed and logs it. A malformed SLUICE_SEED fails the test.
func Get(t testing.TB) uint64 {
	t.Helper()
	if s, ok := FromEnv(t); ok {
		t.Logf("seed %d (from %s)", s, Env)
		return s
	}
	s := uint64(time.Now().UnixNano())
	t.Logf("seed %d (replay with %s=%d)", s, Env, s)
	return s
}

// FromEnv returns the seed in SLUICE_SEED, if it is set: for tests that run a list of fixed
// seeds and replay one of them. A malformed value fails the test.
func FromEnv(t testing.TB) (uint64, bool) {
	t.Helper()
	v := os.Getenv(Env)
	if v == "" {
		return 0, false
	}
	s, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", Env, v, err)
	}
	return s, true
}
