package faultstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/objectstore"
)

// ErrInjected matches every error a Store injects; objectstore.ErrorClass classes it
// "injected".
var ErrInjected error = injectedError{}

type injectedError struct{}

func (injectedError) Error() string      { return "faultstore: injected fault" }
func (injectedError) ErrorClass() string { return "injected" }

// Rule says which operations fail or slow down, and how often. Probabilities are in
// [0, 1]; zero means never.
type Rule struct {
	// Ops the rule applies to; empty means every operation.
	Ops []objectstore.Op
	// Key selects the keys the rule applies to (for List, the listing prefix). If it contains
	// any of "*?[" it is a path.Match glob ("*" does not cross "/"), otherwise a key prefix.
	// Empty matches every key.
	Key string
	// ErrBefore is the probability that the operation fails with ErrInjected without reaching
	// the inner store.
	ErrBefore float64
	// ErrAfter is the probability that the operation reaches the inner store and then fails,
	// as if the answer were lost: Put and Delete return ErrOutcomeUnknown (whatever the inner
	// store answered, success or not); Get, Head and List return ErrInjected and discard the
	// result.
	ErrAfter float64
	// DelayProb is the probability of waiting Delay plus a uniform random part of DelayJitter
	// before the operation. The wait ends early, failing the operation with the context's
	// error, if ctx is done.
	DelayProb   float64
	Delay       time.Duration
	DelayJitter time.Duration
	// BodyErr is the probability that a successful Get's body fails with ErrInjected after a
	// uniformly chosen number of bytes (possibly zero) short of the end.
	BodyErr float64
}

func (r Rule) validate(i int) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("faultstore: rule %d: "+format, append([]any{i}, args...)...))
	}
	for _, op := range r.Ops {
		if !slices.Contains(objectstore.AllOps, op) {
			bad("unknown op %q", op)
		}
	}
	if strings.ContainsAny(r.Key, "*?[") {
		if _, err := path.Match(r.Key, ""); err != nil {
			bad("bad key glob %q: %v", r.Key, err)
		}
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"ErrBefore", r.ErrBefore}, {"ErrAfter", r.ErrAfter}, {"DelayProb", r.DelayProb}, {"BodyErr", r.BodyErr}} {
		if !(p.v >= 0 && p.v <= 1) {
			bad("%s = %v is not a probability in [0, 1]", p.name, p.v)
		}
	}
	if r.ErrBefore+r.ErrAfter > 1 {
		bad("ErrBefore + ErrAfter = %v exceeds 1", r.ErrBefore+r.ErrAfter)
	}
	if r.Delay < 0 || r.DelayJitter < 0 {
		bad("negative Delay or DelayJitter")
	}
	if r.DelayProb > 0 && r.Delay == 0 && r.DelayJitter == 0 {
		bad("DelayProb is %v but Delay and DelayJitter are zero", r.DelayProb)
	}
	if r.DelayProb == 0 && (r.Delay > 0 || r.DelayJitter > 0) {
		bad("Delay or DelayJitter is set but DelayProb is 0, so it never applies")
	}
	return errs
}

func (r *Rule) matches(op objectstore.Op, key string) bool {
	if len(r.Ops) > 0 {
		found := false
		for _, o := range r.Ops {
			found = found || o == op
		}
		if !found {
			return false
		}
	}
	if r.Key == "" {
		return true
	}
	if strings.ContainsAny(r.Key, "*?[") {
		ok, _ := path.Match(r.Key, key)
		return ok
	}
	return strings.HasPrefix(key, r.Key)
}

// Counts counts what a Store did to one operation (or to all).
type Counts struct {
	Calls      int64 // operations seen
	Before     int64 // failed before reaching the inner store
	After      int64 // failed after reaching it
	Delayed    int64 // delayed
	BodyErrors int64 // Get bodies made to fail
}

// Injected is the number of operations that were made to fail.
func (c Counts) Injected() int64 { return c.Before + c.After + c.BodyErrors }

func (c *Counts) add(o Counts) {
	c.Calls += o.Calls
	c.Before += o.Before
	c.After += o.After
	c.Delayed += o.Delayed
	c.BodyErrors += o.BodyErrors
}

// Store is an objectstore.Store that injects faults by rules; see the package documentation.
type Store struct {
	inner objectstore.Store
	seed  uint64

	mu      sync.Mutex
	rules   []Rule
	enabled bool
	calls   map[string]uint64
	counts  map[objectstore.Op]*Counts
}

// New wraps inner. It reports every invalid rule at once.
func New(inner objectstore.Store, seed uint64, rules ...Rule) (*Store, error) {
	if inner == nil {
		return nil, errors.New("faultstore: nil inner store")
	}
	f := &Store{inner: inner, seed: seed, enabled: true, calls: map[string]uint64{}, counts: map[objectstore.Op]*Counts{}}
	for _, op := range objectstore.AllOps {
		f.counts[op] = &Counts{}
	}
	if err := f.SetRules(rules...); err != nil {
		return nil, err
	}
	return f, nil
}

// SetRules replaces the rules; on error the old rules stay.
func (f *Store) SetRules(rules ...Rule) error {
	var errs []error
	for i, r := range rules {
		errs = append(errs, r.validate(i)...)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append([]Rule(nil), rules...)
	return nil
}

// SetEnabled turns fault injection on or off (for example off while a test verifies the
// final state). Disabled calls do not advance the per-key call numbers.
func (f *Store) SetEnabled(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enabled = on
}

// Seed returns the seed.
func (f *Store) Seed() uint64 { return f.seed }

// Inner returns the wrapped store.
func (f *Store) Inner() objectstore.Store { return f.inner }

// Counts returns the counts for op.
func (f *Store) Counts(op objectstore.Op) Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.counts[op]; c != nil {
		return *c
	}
	return Counts{}
}

// Total returns the counts summed over every op.
func (f *Store) Total() Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	var t Counts
	for _, c := range f.counts {
		t.add(*c)
	}
	return t
}

// faultPlan is what happens to one call.
type faultPlan struct {
	rule    int // index of the deciding rule, -1 for none
	before  bool
	after   bool
	delay   time.Duration
	bodyErr bool
	bodyAt  float64 // fraction of the body delivered before a body error
}

func (f *Store) plan(op objectstore.Op, key string) faultPlan {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.counts[op]
	c.Calls++
	p := faultPlan{rule: -1}
	if !f.enabled {
		return p
	}
	for i := range f.rules {
		if f.rules[i].matches(op, key) {
			p.rule = i
			break
		}
	}
	if p.rule < 0 {
		return p
	}
	r := &f.rules[p.rule]
	id := string(op) + "\x00" + key
	n := f.calls[id]
	f.calls[id] = n + 1
	h := fnv.New64a()
	h.Write([]byte(id))
	rng := rand.New(rand.NewPCG(f.seed, h.Sum64()^(n*0x9e3779b97f4a7c15)))
	// Draw every value on every call so that one rule's settings do not shift another's.
	u, d, j, b, at := rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()
	p.before = u < r.ErrBefore
	p.after = !p.before && u < r.ErrBefore+r.ErrAfter
	if d < r.DelayProb {
		p.delay = r.Delay + time.Duration(j*float64(r.DelayJitter))
		c.Delayed++
	}
	p.bodyErr = op == objectstore.OpGet && !p.before && !p.after && b < r.BodyErr
	p.bodyAt = at
	if p.before {
		c.Before++
	}
	if p.after {
		c.After++
	}
	if p.bodyErr {
		c.BodyErrors++
	}
	return p
}

func (p faultPlan) err(when string) error {
	return fmt.Errorf("%w (rule %d, %s)", ErrInjected, p.rule, when)
}

// lostAnswer is the cause of an after-fault on a write. It mentions what the inner store
// answered, as text only, so that the error matches ErrOutcomeUnknown and no other class.
func (p faultPlan) lostAnswer(inner error) error {
	answer := "success"
	if inner != nil {
		answer = inner.Error()
	}
	return fmt.Errorf("%w (rule %d, after; the inner store answered: %s)", ErrInjected, p.rule, answer)
}

// start applies the plan's delay and before-fault.
func (f *Store) start(ctx context.Context, op objectstore.Op, key string) (faultPlan, error) {
	p := f.plan(op, key)
	if p.delay > 0 {
		t := time.NewTimer(p.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return p, objectstore.NewOpError(string(op), key, nil, ctx.Err())
		}
	}
	if p.before {
		return p, objectstore.NewOpError(string(op), key, nil, p.err("before"))
	}
	return p, nil
}

// Get implements Store.
func (f *Store) Get(ctx context.Context, key string, opts objectstore.GetOptions) (*objectstore.Object, error) {
	p, err := f.start(ctx, objectstore.OpGet, key)
	if err != nil {
		return nil, err
	}
	obj, err := f.inner.Get(ctx, key, opts)
	if p.after {
		if err == nil {
			obj.Body.Close()
		}
		return nil, objectstore.NewOpError("get", key, nil, p.err("after"))
	}
	if err != nil || !p.bodyErr {
		return obj, err
	}
	_, n := opts.Range.Span(obj.Size)
	obj.Body = &faultBody{ReadCloser: obj.Body, left: int64(p.bodyAt * float64(n)), err: objectstore.NewOpError("get", key, nil, p.err("body"))}
	return obj, nil
}

type faultBody struct {
	io.ReadCloser
	left int64
	err  error
}

func (b *faultBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if errors.Is(err, io.EOF) {
		return n, b.err
	}
	return n, err
}

// Head implements Store.
func (f *Store) Head(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	p, err := f.start(ctx, objectstore.OpHead, key)
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	info, err := f.inner.Head(ctx, key)
	if p.after {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("head", key, nil, p.err("after"))
	}
	return info, err
}

// Put implements Store.
func (f *Store) Put(ctx context.Context, key string, body io.Reader, size int64, cond objectstore.PutCondition) (objectstore.ObjectInfo, error) {
	p, err := f.start(ctx, objectstore.OpPut, key)
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	info, err := f.inner.Put(ctx, key, body, size, cond)
	if p.after {
		return objectstore.ObjectInfo{}, objectstore.NewOpError("put", key, objectstore.ErrOutcomeUnknown, p.lostAnswer(err))
	}
	return info, err
}

// Delete implements Store.
func (f *Store) Delete(ctx context.Context, key string) error {
	p, err := f.start(ctx, objectstore.OpDelete, key)
	if err != nil {
		return err
	}
	err = f.inner.Delete(ctx, key)
	if p.after {
		return objectstore.NewOpError("delete", key, objectstore.ErrOutcomeUnknown, p.lostAnswer(err))
	}
	return err
}

// List implements Store.
func (f *Store) List(ctx context.Context, prefix, startAfter string, limit int) (objectstore.ListPage, error) {
	p, err := f.start(ctx, objectstore.OpList, prefix)
	if err != nil {
		return objectstore.ListPage{}, err
	}
	page, err := f.inner.List(ctx, prefix, startAfter, limit)
	if p.after {
		return objectstore.ListPage{}, objectstore.NewOpError("list", prefix, nil, p.err("after"))
	}
	return page, err
}

// Close closes the inner store.
func (f *Store) Close() error { return f.inner.Close() }
