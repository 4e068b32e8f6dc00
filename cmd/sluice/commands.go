package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/batchfmt"
	"github.com/sluice-dev/sluice/manifest"
	"github.com/sluice-dev/sluice/producer"
	"github.com/sluice-dev/sluice/stream"
)

// defaultCLIDeliveryTimeout is how long the CLI's appends wait for a store that refuses them
// or does not answer (append --delivery-timeout; fence and trim): long enough for a slow but
// working store to take a full buffer (256 MiB) at about 1 MB/s.
const defaultCLIDeliveryTimeout = 5 * time.Minute

// newProducer opens a producer on an existing stream (library mode never creates a stream
// implicitly, except append --create). An append not committed deliveryTimeout after its
// batch was flushed fails (producer.ErrDeliveryTimeout; 0: no bound).
func (e *libEnv) newProducer(ctx context.Context, st stream.Stream, create bool, deliveryTimeout time.Duration, tweak ...func(*producer.Config)) (*producer.Producer, error) {
	cfg := producer.DefaultConfig()
	cfg.DeliveryTimeout = deliveryTimeout
	for _, t := range tweak {
		t(&cfg)
	}
	cfg.ObjectStore = e.store
	cfg.Stream = st
	cfg.CreateStream = create
	cfg.Logger = e.log
	p, err := producer.New(ctx, cfg)
	if err != nil {
		return nil, e.streamErr(st.Name(), err)
	}
	return p, nil
}

// closeProducer drains p, giving in-flight commits up to a minute even when ctx (the
// command's, cancelled by SIGINT/SIGTERM) is done.
func closeProducer(p *producer.Producer) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return p.Close(ctx)
}

// appendErr explains an append's failure, naming the flag that set the failed condition.
func appendErr(err error) error {
	var sm *manifest.SeqNumMismatchError
	var fm *manifest.FencingTokenMismatchError
	switch {
	case errors.As(err, &sm):
		return fmt.Errorf("append rejected: match_seq_num does not match the stream's tail, which is at seq_num %d (check --match-seq-num): %w", sm.Expected, err)
	case errors.As(err, &fm):
		return fmt.Errorf("append rejected: fencing token mismatch, the stream's fencing token is %q (check --fencing-token): %w", fm.Actual, err)
	case errors.Is(err, manifest.ErrTimestampRequired):
		return fmt.Errorf("append rejected: the stream's timestamping mode is client-require and a record has no timestamp (use --format json with \"timestamp\"): %w", err)
	}
	return err
}

func newTailCmd(g *globals) *cobra.Command {
	var basin string
	var follow bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "tail STREAM",
		Short: "Print the stream's tail position",
		Long: `Print the tail of STREAM as JSON: {"tail":{"seq_num":N,"timestamp":T}}, where N is
the seq_num the next record will get and T the timestamp of the last record.

With --follow, print it again (one JSON line each) whenever it changes, checking every
--interval, until SIGINT/SIGTERM (exit 0). To print the new records themselves as they
arrive: sluice read STREAM --tail-offset 0 --follow.`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if interval <= 0 {
				return fmt.Errorf("invalid value %v for --interval: must be positive", interval)
			}
			b, err := openBackend(ctx, g, &basin)
			if err != nil {
				return err
			}
			defer b.close()
			out := newJSONOut(cmd.OutOrStdout())
			var last *positionJSON
			for {
				t, err := b.tail(ctx, args[0])
				if err != nil {
					if follow && ctx.Err() != nil {
						return nil
					}
					return err
				}
				if last == nil || *last != t {
					if err := out.write(map[string]positionJSON{"tail": t}); err != nil {
						return err
					}
					last = &t
				}
				if !follow {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	addBasinFlag(cmd, &basin)
	cmd.Flags().BoolVar(&follow, "follow", false, "print the tail again whenever it changes, until interrupted")
	cmd.Flags().Var(newDurationValue(&interval, time.Second), "interval", "with --follow, how often to check the tail")
	return cmd
}

// commandAppend appends one command record and prints its ack.
func commandAppend(cmd *cobra.Command, g *globals, basin *string, name string, rec batchfmt.Record, fencing *string, matchSeq *uint64) error {
	ctx := cmd.Context()
	b, err := openBackend(ctx, g, basin)
	if err != nil {
		return err
	}
	defer b.close()
	in := batchfmt.AppendInput{Records: []batchfmt.Record{rec}, FencingToken: fencing, MatchSeqNum: matchSeq}
	ack, err := b.appendSync(ctx, name, in)
	if err != nil {
		return err
	}
	return newJSONOut(cmd.OutOrStdout()).write(ack)
}

// conditionFlags are --fencing-token and --match-seq-num.
type conditionFlags struct {
	fencingToken string
	matchSeqNum  uint64
}

func (c *conditionFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.fencingToken, "fencing-token", "", "append only if the stream's fencing token is this (at most 48 bytes)")
	cmd.Flags().Uint64Var(&c.matchSeqNum, "match-seq-num", 0, "append only if the first record gets this seq_num (the stream's tail)")
}

// get returns the conditions that were set, or an error naming the flag.
func (c *conditionFlags) get(cmd *cobra.Command) (*string, *uint64, error) {
	var tok *string
	var seq *uint64
	if cmd.Flags().Changed("fencing-token") {
		if len(c.fencingToken) > 48 {
			return nil, nil, fmt.Errorf("invalid value for --fencing-token: %d bytes, at most 48", len(c.fencingToken))
		}
		t := c.fencingToken
		tok = &t
	}
	if cmd.Flags().Changed("match-seq-num") {
		s := c.matchSeqNum
		seq = &s
	}
	return tok, seq, nil
}

func newFenceCmd(g *globals) *cobra.Command {
	var basin string
	cond := &conditionFlags{}
	cmd := &cobra.Command{
		Use:   "fence STREAM TOKEN",
		Short: "Set the stream's fencing token",
		Long: `Append a fence command record to STREAM that sets its fencing token to TOKEN (at most
48 bytes; "" clears it). From then on, appends that carry a fencing token must carry TOKEN.
The fence record takes a seq_num like any record. It prints the append's ack as JSON.
With --fencing-token, the fence applies only if the current token is that one.`,
		Example: `  sluice fence orders writer-2 --fencing-token writer-1`,
		Args:    exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args[1]) > 48 {
				return fmt.Errorf("invalid fencing token %q: %d bytes, at most 48", args[1], len(args[1]))
			}
			tok, seq, err := cond.get(cmd)
			if err != nil {
				return err
			}
			return commandAppend(cmd, g, &basin, args[0], batchfmt.FenceRecord(args[1]), tok, seq)
		},
	}
	addBasinFlag(cmd, &basin)
	cond.register(cmd)
	return cmd
}

func newTrimCmd(g *globals) *cobra.Command {
	var basin string
	cond := &conditionFlags{}
	cmd := &cobra.Command{
		Use:   "trim STREAM SEQ",
		Short: "Trim the stream: records before SEQ become unreadable",
		Long: `Append a trim command record to STREAM that moves its trim point to SEQ: records with
smaller seq_nums become unreadable, and their objects are deleted by a later GC pass.
The trim point never moves backwards, and never further than just past the trim record
itself (as S2: a SEQ beyond the stream trims everything up to and including the trim
record, and nothing appended after it). Trimming cannot be undone. It prints the append's
ack as JSON.`,
		Example: `  sluice trim orders 1000`,
		Args:    exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := parseSeq("SEQ", args[1])
			if err != nil {
				return err
			}
			tok, mseq, err := cond.get(cmd)
			if err != nil {
				return err
			}
			return commandAppend(cmd, g, &basin, args[0], batchfmt.TrimRecord(seq), tok, mseq)
		},
	}
	addBasinFlag(cmd, &basin)
	cond.register(cmd)
	return cmd
}

// inspectJSON is the read-only dump of a manifest.
type inspectJSON struct {
	Stream        string                  `json:"stream"`
	Basin         string                  `json:"basin,omitempty"`
	ManifestKey   string                  `json:"manifest_key"`
	Version       string                  `json:"version"`
	Generation    string                  `json:"generation"`
	WriteCounter  uint64                  `json:"write_counter"`
	CreatedMs     uint64                  `json:"created_ms"`
	Tail          positionJSON            `json:"tail"`
	TrimPoint     uint64                  `json:"trim_point"`
	ReadableStart uint64                  `json:"readable_start"`
	FencingToken  string                  `json:"fencing_token"`
	Committer     *committerJSON          `json:"committer"`
	Config        streamConfigJSON        `json:"config"`
	Groups        map[string]groupJSON    `json:"groups"`
	Producers     map[string]producerJSON `json:"producers"`
	Segments      []segmentJSON           `json:"segments"`
	Entries       []entryJSON             `json:"entries"`
	Totals        map[string]uint64       `json:"totals"`
}

// committerJSON is the stream's committer role; null when it has none.
type committerJSON struct {
	ID      string `json:"id"`
	URL     string `json:"url"`
	UntilMs uint64 `json:"until_ms"`
	Live    bool   `json:"live"`
}

type groupJSON struct {
	Epoch      uint64 `json:"epoch"`
	Checkpoint uint64 `json:"checkpoint"`
}

type producerJSON struct {
	LastBatch  uint64 `json:"last_batch"`
	LastSeenMs uint64 `json:"last_seen_ms"`
}

type segmentJSON struct {
	Key          string `json:"key"`
	Level        uint8  `json:"level"`
	FirstSeq     uint64 `json:"first_seq"`
	EndSeq       uint64 `json:"end_seq"`
	MinTS        uint64 `json:"min_ts"`
	MaxTS        uint64 `json:"max_ts"`
	Entries      uint64 `json:"entries"`
	MeteredBytes uint64 `json:"metered_bytes"`
	ObjectBytes  uint64 `json:"object_bytes"`
	MaxArrival   uint64 `json:"max_arrival"`
}

type rejectionJSON struct {
	Append   uint32 `json:"append"`
	Reason   string `json:"reason"`
	Expected uint64 `json:"expected,omitempty"`
	Actual   string `json:"actual,omitempty"`
}

type entryJSON struct {
	Key          string          `json:"key"`
	FirstSeq     uint64          `json:"first_seq"`
	Records      uint64          `json:"records"`
	MeteredBytes uint64          `json:"metered_bytes"`
	ObjectBytes  uint64          `json:"object_bytes"`
	MinTS        uint64          `json:"min_ts"`
	MaxTS        uint64          `json:"max_ts"`
	Floor        uint64          `json:"floor"`
	Arrival      uint64          `json:"arrival"`
	TSMode       string          `json:"timestamping_mode"`
	Uncapped     bool            `json:"uncapped"`
	ProducerID   string          `json:"producer_id"`
	BatchNum     uint64          `json:"batch_num"`
	Appends      uint32          `json:"appends"`
	Rejected     []rejectionJSON `json:"rejected,omitempty"`
}

func rejectReason(r manifest.RejectReason) string {
	switch r {
	case manifest.RejectSeqNumMismatch:
		return "seq_num_mismatch"
	case manifest.RejectFencingToken:
		return "fencing_token_mismatch"
	case manifest.RejectTimestampRequired:
		return "timestamp_required"
	case manifest.RejectPreceding:
		return "preceding_append_failed"
	}
	return fmt.Sprintf("unknown(%d)", uint8(r))
}

func inspectState(name, basin, key string, snap *manifest.Snapshot) inspectJSON {
	s := snap.State
	out := inspectJSON{
		Stream: name, Basin: basin, ManifestKey: key, Version: snap.Version,
		Generation: s.GenerationString(), WriteCounter: s.WriteCounter, CreatedMs: s.CreatedMs,
		Tail: posJSON(s.Tail), TrimPoint: s.TrimPoint, ReadableStart: s.ReadableStart(),
		FencingToken: s.FencingToken, Config: configJSON(s.Config),
		Groups: map[string]groupJSON{}, Producers: map[string]producerJSON{},
		Segments: []segmentJSON{}, Entries: []entryJSON{},
	}
	if r := s.Committer; r.ID != "" {
		out.Committer = &committerJSON{ID: r.ID, URL: r.URL, UntilMs: r.UntilMs, Live: r.Live(time.Now())}
	}
	for n, gr := range s.Groups {
		out.Groups[n] = groupJSON{Epoch: gr.Epoch, Checkpoint: gr.Checkpoint}
	}
	for id, p := range s.Producers {
		out.Producers[id] = producerJSON{LastBatch: p.LastBatch, LastSeenMs: p.LastSeenMs}
	}
	var metered, object, entries uint64
	for _, r := range s.Segments {
		out.Segments = append(out.Segments, segmentJSON{
			Key: r.Key, Level: r.Level, FirstSeq: r.FirstSeq, EndSeq: r.EndSeq, MinTS: r.MinTS, MaxTS: r.MaxTS,
			Entries: r.Entries, MeteredBytes: r.MeteredBytes, ObjectBytes: r.ObjectBytes, MaxArrival: r.MaxArrival,
		})
		metered += r.MeteredBytes
		object += r.ObjectBytes
		entries += r.Entries
	}
	for _, en := range s.Entries {
		ej := entryJSON{
			Key: en.Key, FirstSeq: en.FirstSeq, Records: en.Records, MeteredBytes: en.MeteredBytes,
			ObjectBytes: en.ObjectBytes, MinTS: en.MinTS, MaxTS: en.MaxTS, Floor: en.Floor, Arrival: en.Arrival,
			TSMode: en.TSMode.String(), Uncapped: en.Uncapped, ProducerID: en.ProducerID, BatchNum: en.BatchNum,
			Appends: en.Appends,
		}
		for _, r := range en.Rejected {
			ej.Rejected = append(ej.Rejected, rejectionJSON{Append: r.Append, Reason: rejectReason(r.Reason), Expected: r.Expected, Actual: r.Actual})
		}
		out.Entries = append(out.Entries, ej)
		metered += en.MeteredBytes
		object += en.ObjectBytes
		entries++
	}
	out.Totals = map[string]uint64{"entries": entries, "metered_bytes": metered, "object_bytes": object}
	return out
}

func newInspectCmd(g *globals) *cobra.Command {
	var basin string
	cmd := &cobra.Command{
		Use:   "inspect STREAM",
		Short: "Dump the stream's manifest as JSON (read-only)",
		Long: `Print the manifest of STREAM as JSON (read-only: nothing is changed): generation, write
counter, tail, trim point, fencing token, configuration, consumer groups (epoch and
checkpoint), the producer deduplication table, sealed segment references, the recent
entries (one per batch object) and totals. Sealed segments are not expanded.`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			e, err := openLib(ctx, g, &basin)
			if err != nil {
				return err
			}
			defer e.close()
			st, snap, err := e.load(ctx, args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), inspectState(args[0], basin, st.ManifestKey(), snap))
		},
	}
	addBasinFlag(cmd, &basin)
	return cmd
}
