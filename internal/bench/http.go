package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/objectstore"
	"github.com/sluice-dev/sluice/s2api"
)

// ErrEndpoint is matched by a malformed endpoint URL.
var ErrEndpoint = errors.New("bench: invalid endpoint")

// maxSSELine bounds one line of the read session: a batch of up to 1 MiB of records as JSON.
const maxSSELine = 16 << 20

// HTTPTarget runs against daemons through S2's HTTP API: each writer is an HTTP client
// with one unary protobuf append in flight, sent to the daemons in turn (as a balancer
// would), the reader an SSE read session of the first. Store requests are read from the
// daemons' /metrics (sluice_objectstore_operations_total), which count all of their
// requests, also those of other clients.
type HTTPTarget struct {
	apis, metrics []string // base URLs: .../v1 and .../metrics, one per daemon
	token         string
	basin         string
	makeBasin     bool
	stream        string
	client        *http.Client

	mu            sync.Mutex
	basinCreated  bool
	streamCreated bool
}

// NewHTTPTarget returns a target for the stream name in basin at the daemon endpoint
// ("http://host:port", or its API base ending in /v1; several, comma-separated, for daemons
// of one store). With makeBasin, Create creates the basin and Delete deletes it again;
// otherwise the basin must exist. token, if not empty, is sent as a bearer token.
func NewHTTPTarget(endpoint, token, basin, name string, makeBasin bool, producers int) (*HTTPTarget, error) {
	t := &HTTPTarget{token: token, basin: basin, makeBasin: makeBasin, stream: name}
	for _, e := range strings.Split(endpoint, ",") {
		u, err := url.Parse(strings.TrimSpace(e))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: %q: want http://host:port or https://host:port", ErrEndpoint, e)
		}
		path := strings.TrimSuffix(u.Path, "/")
		if !strings.HasSuffix(path, "/v1") {
			path += "/v1"
		}
		root := u.Scheme + "://" + u.Host
		t.apis, t.metrics = append(t.apis, root+path), append(t.metrics, root+"/metrics")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = producers + 4
	t.client = &http.Client{Transport: tr}
	return t, nil
}

// do sends one API call and returns the response body of a 2xx answer; any other answer
// is an error with the API's code and message.
func (t *HTTPTarget) do(ctx context.Context, method, path string, body []byte, hdr map[string]string) ([]byte, error) {
	return t.doAt(ctx, 0, method, path, body, hdr)
}

// doAt is do, sent to the i-th daemon.
func (t *HTTPTarget) doAt(ctx context.Context, i int, method, path string, body []byte, hdr map[string]string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, t.apis[i]+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	t.headers(req)
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %w", method, path, res.Status, s2api.DecodeErrorBody(res.StatusCode, b))
	}
	return b, nil
}

func (t *HTTPTarget) headers(req *http.Request) {
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	req.Header.Set("S2-Basin", t.basin)
}

func (t *HTTPTarget) streamPath() string { return "/streams/" + url.PathEscape(t.stream) }

// Create creates the basin (with makeBasin) and the stream.
func (t *HTTPTarget) Create(ctx context.Context) error {
	if t.makeBasin {
		body := fmt.Appendf(nil, `{"basin":%q}`, t.basin)
		if _, err := t.do(ctx, "POST", "/basins", body, nil); err != nil {
			return fmt.Errorf("creating basin %q: %w", t.basin, err)
		}
		t.mu.Lock()
		t.basinCreated = true
		t.mu.Unlock()
	}
	body := fmt.Appendf(nil, `{"stream":%q}`, t.stream)
	if _, err := t.do(ctx, "POST", "/streams", body, nil); err != nil {
		return err
	}
	t.mu.Lock()
	t.streamCreated = true
	t.mu.Unlock()
	return nil
}

// Delete deletes the stream, and the basin if Create made it.
func (t *HTTPTarget) Delete(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	if t.streamCreated {
		if _, err := t.do(ctx, "DELETE", t.streamPath(), nil, nil); err != nil {
			errs = append(errs, err)
		} else {
			t.streamCreated = false
		}
	}
	if t.basinCreated {
		if _, err := t.do(ctx, "DELETE", "/basins/"+url.PathEscape(t.basin), nil, nil); err != nil {
			errs = append(errs, fmt.Errorf("deleting basin %q: %w", t.basin, err))
		} else {
			t.basinCreated = false
		}
	}
	return errors.Join(errs...)
}

// Requests sums sluice_objectstore_operations_total by op and purpose from the daemons'
// /metrics; false when one cannot be read.
func (t *HTTPTarget) Requests(ctx context.Context) (map[string]int64, bool) {
	all := map[string]int64{}
	for _, u := range t.metrics {
		m, ok := t.opCounts(ctx, u)
		if !ok {
			return nil, false
		}
		for op, n := range m {
			all[op] += n
		}
	}
	return all, true
}

func (t *HTTPTarget) opCounts(ctx context.Context, metricsURL string) (map[string]int64, bool) {
	req, err := http.NewRequestWithContext(ctx, "GET", metricsURL, nil)
	if err != nil {
		return nil, false
	}
	res, err := t.client.Do(req)
	if err != nil {
		return nil, false
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, false
	}
	return parseOpCounts(res.Body)
}

// parseOpCounts sums the samples of sluice_objectstore_operations_total in Prometheus' text
// format by their op and purpose labels, as "op/purpose" (RequestKey; purpose "other" for
// a sample without one).
func parseOpCounts(r io.Reader) (map[string]int64, bool) {
	const family = "sluice_objectstore_operations_total{"
	m := map[string]int64{}
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), family)
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(line, "} ")
		if !ok {
			continue
		}
		op, purpose := "", string(objectstore.PurposeOther)
		for _, l := range strings.Split(labels, ",") {
			if v, ok := strings.CutPrefix(l, `op="`); ok {
				op = strings.TrimSuffix(v, `"`)
			}
			if v, ok := strings.CutPrefix(l, `purpose="`); ok {
				purpose = strings.TrimSuffix(v, `"`)
			}
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if op == "" || err != nil {
			continue
		}
		m[RequestKey(op, purpose)] += int64(v)
		found = true
	}
	return m, found && sc.Err() == nil
}

// NewWriter returns an HTTP client of the stream; the i-th starts at the i-th daemon.
func (t *HTTPTarget) NewWriter(_ context.Context, i int) (Writer, error) {
	return &httpWriter{t: t, next: i % len(t.apis)}, nil
}

type httpWriter struct {
	t    *HTTPTarget
	buf  []byte
	next int // the daemon of the next append
}

// BatchesRecords is false: the runner sends what has queued up while an append was in flight.
func (w *httpWriter) BatchesRecords() bool { return false }

// Send appends recs with one protobuf POST and waits for its ack.
func (w *httpWriter) Send(ctx context.Context, recs []batchfmt.Record) (Pending, error) {
	w.buf = s2api.AppendAppendInputProto(w.buf[:0], &batchfmt.AppendInput{Records: recs})
	daemon := w.next
	w.next = (w.next + 1) % len(w.t.apis)
	b, err := w.t.doAt(ctx, daemon, "POST", w.t.streamPath()+"/records", w.buf, map[string]string{"Content-Type": "application/protobuf", "Accept": "application/protobuf"})
	if err != nil {
		return nil, err
	}
	at := time.Now()
	ack, err := s2api.DecodeAppendAckProto(b)
	if err != nil {
		return nil, fmt.Errorf("append ack: %w", err)
	}
	if n := ack.End.SeqNum - ack.Start.SeqNum; n != uint64(len(recs)) {
		return nil, fmt.Errorf("append of %d records acknowledged %d", len(recs), n)
	}
	return done{at: at}, nil
}

func (w *httpWriter) Close(context.Context) error { return nil }

// Follow opens an SSE read session from seq_num 0.
func (t *HTTPTarget) Follow(ctx context.Context) (Follower, error) {
	f := &httpFollower{t: t}
	if err := f.open(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// httpFollower reads an SSE session, reopening it from the next seq_num when the daemon
// ends it.
type httpFollower struct {
	t    *HTTPTarget
	next uint64
	body io.ReadCloser
	sse  *s2api.SSEReader
}

func (f *httpFollower) open(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, "GET", f.t.apis[0]+f.t.streamPath()+"/records?seq_num="+strconv.FormatUint(f.next, 10), nil)
	if err != nil {
		return err
	}
	f.t.headers(req)
	req.Header.Set("Accept", "text/event-stream")
	res, err := f.t.client.Do(req)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return fmt.Errorf("read session: %s: %w", res.Status, s2api.DecodeErrorBody(res.StatusCode, b))
	}
	f.body, f.sse = res.Body, s2api.NewSSEReader(res.Body, maxSSELine)
	return nil
}

func (f *httpFollower) Next(ctx context.Context) ([][]batchfmt.Header, error) {
	for {
		if f.sse == nil {
			if err := f.open(ctx); err != nil {
				return nil, err
			}
		}
		body := f.body
		stop := context.AfterFunc(ctx, func() { body.Close() }) // ends a blocked read
		ev, err := f.sse.Next()
		stop()
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			f.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				continue // the daemon ended the session: read on from the next record
			}
			return nil, err
		}
		switch ev.Event {
		case "batch":
			b, err := s2api.DecodeReadBatchJSON([]byte(ev.Data), s2api.FormatRaw)
			if err != nil {
				return nil, fmt.Errorf("read session batch: %w", err)
			}
			if len(b.Records) == 0 {
				continue
			}
			f.next = b.Records[len(b.Records)-1].SeqNum + 1
			hs := make([][]batchfmt.Header, len(b.Records))
			for i := range b.Records {
				hs[i] = b.Records[i].Headers
			}
			return hs, nil
		case "error":
			return nil, fmt.Errorf("read session: %s", ev.Data)
		}
	}
}

func (f *httpFollower) Close() {
	if f.body != nil {
		f.body.Close()
		f.body, f.sse = nil, nil
	}
}
