package server

import (
	"crypto/sha256"
	"sync"
)

// Creates (POST /basins, POST /streams) may carry S2-Request-Token, an idempotency key: a
// retry of a create that succeeded gets the same answer instead of a 409. The server keeps the
// answers of the last maxIdempotent successful creates that had a token, in memory.

const maxIdempotent = 4096

type idemKey struct {
	route, basin, token string
}

type idemEntry struct {
	body   [sha256.Size]byte // of the request body: a different request with the token is not a retry
	status int
	resp   []byte
}

type idempotency struct {
	mu    sync.Mutex // held across a create that has a token, so retries do not race it
	byKey map[idemKey]idemEntry
	order []idemKey // FIFO eviction
}

// recorder captures a handler's answer: its status (as statusWriter does) and its body.
type recorder struct {
	statusWriter
	body []byte
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body = append(r.body, b...)
	return r.statusWriter.Write(b)
}

// idempotent runs create (which reads the body through q and writes the answer) unless the
// same request with the same token already succeeded, in which case it replays that answer.
func (s *Server) idempotent(q *request, create func(q *request, body []byte)) {
	body, err := s.readBody(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	token := q.r.Header.Get("S2-Request-Token")
	if token == "" {
		create(q, body)
		return
	}
	// Keyed by caller too: a token does not get the answer of another's create.
	key := idemKey{route: q.route, basin: q.basin, token: q.principal.Name() + "\x00" + token}
	sum := sha256.Sum256(body)
	s.idem.mu.Lock()
	defer s.idem.mu.Unlock()
	if e, ok := s.idem.byKey[key]; ok && e.body == sum {
		q.w.Header().Set("Content-Type", "application/json")
		q.w.WriteHeader(e.status)
		_, _ = q.w.Write(e.resp)
		return
	}
	rec := &recorder{statusWriter: statusWriter{ResponseWriter: q.w}}
	q2 := *q
	q2.w = rec
	create(&q2, body)
	if rec.status < 200 || rec.status > 299 {
		return
	}
	if s.idem.byKey == nil {
		s.idem.byKey = map[idemKey]idemEntry{}
	}
	if _, ok := s.idem.byKey[key]; !ok {
		s.idem.order = append(s.idem.order, key)
	}
	s.idem.byKey[key] = idemEntry{body: sum, status: rec.status, resp: rec.body}
	for len(s.idem.order) > maxIdempotent {
		delete(s.idem.byKey, s.idem.order[0])
		s.idem.order = s.idem.order[1:]
	}
}
