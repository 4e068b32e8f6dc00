package objectstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"time"
)

// Op names a Store operation, for fault rules and instrumentation.
type Op string

// The Store operations.
const (
	OpGet    Op = "get"
	OpHead   Op = "head"
	OpPut    Op = "put"
	OpDelete Op = "delete"
	OpList   Op = "list"
)

// AllOps lists every Op.
var AllOps = []Op{OpGet, OpHead, OpPut, OpDelete, OpList}

func (o Op) valid() bool {
	switch o {
	case OpGet, OpHead, OpPut, OpDelete, OpList:
		return true
	}
	return false
}

// ErrInjected matches every error a FaultStore injects.
var ErrInjected = errors.New("objectstore: injected fault")

// FaultRule says which operations fail or slow down, and how often. Probabilities are in
// [0, 1]; zero means never.
type FaultRule struct {
	// Ops the rule applies to; empty means every operation.
	Ops []Op
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

func (r FaultRule) validate(i int) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("objectstore: fault rule %d: "+format, append([]any{i}, args...)...))
	}
	for _, op := range r.Ops {
		if !op.valid() {
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

func (r *FaultRule) matches(op Op, key string) bool {
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

// FaultCounts counts what a FaultStore did to one operation (or to all).
type FaultCounts struct {
	Calls      int64 // operations seen
	Before     int64 // failed before reaching the inner store
	After      int64 // failed after reaching it
	Delayed    int64 // delayed
	BodyErrors int64 // Get bodies made to fail
}

// Injected is the number of operations that were made to fail.
func (c FaultCounts) Injected() int64 { return c.Before + c.After + c.BodyErrors }

func (c *FaultCounts) add(o FaultCounts) {
	c.Calls += o.Calls
	c.Before += o.Before
	c.After += o.After
	c.Delayed += o.Delayed
	c.BodyErrors += o.BodyErrors
}

// FaultStore wraps a Store and injects failures and delays by rules, with seeded randomness.
//
// For each operation the first rule (in order) that matches its op and key decides; later rules
// are not consulted, so put specific rules first. The decisions for the n-th call of an
// operation on a key depend only on the seed, the op, the key and n: a run that issues the same
// operations per key gets the same faults, however its goroutines interleave across keys.
type FaultStore struct {
	inner Store
	seed  uint64

	mu      sync.Mutex
	rules   []FaultRule
	enabled bool
	calls   map[string]uint64
	counts  map[Op]*FaultCounts
}

// NewFaultStore wraps inner. It reports every invalid rule at once.
func NewFaultStore(inner Store, seed uint64, rules ...FaultRule) (*FaultStore, error) {
	if inner == nil {
		return nil, errors.New("objectstore: fault store: nil inner store")
	}
	f := &FaultStore{inner: inner, seed: seed, enabled: true, calls: map[string]uint64{}, counts: map[Op]*FaultCounts{}}
	for _, op := range AllOps {
		f.counts[op] = &FaultCounts{}
	}
	if err := f.SetRules(rules...); err != nil {
		return nil, err
	}
	return f, nil
}

// SetRules replaces the rules; on error the old rules stay.
func (f *FaultStore) SetRules(rules ...FaultRule) error {
	var errs []error
	for i, r := range rules {
		errs = append(errs, r.validate(i)...)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append([]FaultRule(nil), rules...)
	return nil
}

// SetEnabled turns fault injection on or off (for example off while a test verifies the
// final state). Disabled calls do not advance the per-key call numbers.
func (f *FaultStore) SetEnabled(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enabled = on
}

// Seed returns the seed.
func (f *FaultStore) Seed() uint64 { return f.seed }

// Inner returns the wrapped store.
func (f *FaultStore) Inner() Store { return f.inner }

// Counts returns the counts for op.
func (f *FaultStore) Counts(op Op) FaultCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.counts[op]; c != nil {
		return *c
	}
	return FaultCounts{}
}

// Total returns the counts summed over every op.
func (f *FaultStore) Total() FaultCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	var t FaultCounts
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

func (f *FaultStore) plan(op Op, key string) faultPlan {
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
	p.bodyErr = op == OpGet && !p.before && !p.after && b < r.BodyErr
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
func (f *FaultStore) start(ctx context.Context, op Op, key string) (faultPlan, error) {
	p := f.plan(op, key)
	if p.delay > 0 {
		t := time.NewTimer(p.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return p, NewOpError(string(op), key, nil, ctx.Err())
		}
	}
	if p.before {
		return p, NewOpError(string(op), key, nil, p.err("before"))
	}
	return p, nil
}

// Get implements Store.
func (f *FaultStore) Get(ctx context.Context, key string, opts GetOptions) (*Object, error) {
	p, err := f.start(ctx, OpGet, key)
	if err != nil {
		return nil, err
	}
	obj, err := f.inner.Get(ctx, key, opts)
	if p.after {
		if err == nil {
			obj.Body.Close()
		}
		return nil, NewOpError("get", key, nil, p.err("after"))
	}
	if err != nil || !p.bodyErr {
		return obj, err
	}
	_, n := opts.Range.span(obj.Size)
	obj.Body = &faultBody{ReadCloser: obj.Body, left: int64(p.bodyAt * float64(n)), err: NewOpError("get", key, nil, p.err("body"))}
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
func (f *FaultStore) Head(ctx context.Context, key string) (ObjectInfo, error) {
	p, err := f.start(ctx, OpHead, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := f.inner.Head(ctx, key)
	if p.after {
		return ObjectInfo{}, NewOpError("head", key, nil, p.err("after"))
	}
	return info, err
}

// Put implements Store.
func (f *FaultStore) Put(ctx context.Context, key string, body io.Reader, size int64, cond PutCondition) (ObjectInfo, error) {
	p, err := f.start(ctx, OpPut, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := f.inner.Put(ctx, key, body, size, cond)
	if p.after {
		return ObjectInfo{}, NewOpError("put", key, ErrOutcomeUnknown, p.lostAnswer(err))
	}
	return info, err
}

// Delete implements Store.
func (f *FaultStore) Delete(ctx context.Context, key string) error {
	p, err := f.start(ctx, OpDelete, key)
	if err != nil {
		return err
	}
	err = f.inner.Delete(ctx, key)
	if p.after {
		return NewOpError("delete", key, ErrOutcomeUnknown, p.lostAnswer(err))
	}
	return err
}

// List implements Store.
func (f *FaultStore) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	p, err := f.start(ctx, OpList, prefix)
	if err != nil {
		return ListPage{}, err
	}
	page, err := f.inner.List(ctx, prefix, startAfter, limit)
	if p.after {
		return ListPage{}, NewOpError("list", prefix, nil, p.err("after"))
	}
	return page, err
}

// Close closes the inner store.
func (f *FaultStore) Close() error { return f.inner.Close() }
