// Package faultstore wraps an objectstore.Store and injects failures, outcome-unknown
// errors and delays by rules, with seeded randomness, for tests of the protocols above the
// store (as pebble's errorfs does for a file system).
//
// For each operation the first rule (in order) that matches its op and key decides; later rules
// are not consulted, so put specific rules first. The decisions for the n-th call of an
// operation on a key depend only on the seed, the op, the key and n: a run that issues the same
// operations per key gets the same faults, however its goroutines interleave across keys.
//
// A fault before the call fails it with ErrInjected without reaching the inner store; a fault
// after it discards the answer as if it were lost (writes then report
// objectstore.ErrOutcomeUnknown); a body fault cuts a Get's body short. Without rules, or
// while disabled, the wrapper passes every call through and conforms to the Store contract.
package faultstore
