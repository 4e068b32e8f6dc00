package testseed

import "testing"

func TestFromEnv(t *testing.T) {
	t.Setenv(Env, "")
	if _, ok := FromEnv(t); ok {
		t.Fatal("an empty SLUICE_SEED gave a seed")
	}
	t.Setenv(Env, "18446744073709551615")
	if s, ok := FromEnv(t); !ok || s != 1<<64-1 {
		t.Fatalf("FromEnv = %d, %v", s, ok)
	}
	if s := Get(t); s != 1<<64-1 {
		t.Fatalf("Get = %d, want the seed in %s", s, Env)
	}
}
