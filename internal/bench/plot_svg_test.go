package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestWriteSVGDrawsBothPanels: the plot is an SVG document with both panels' titles, also
// for a run whose reader got nothing.
func TestWriteSVGDrawsBothPanels(t *testing.T) {
	res := &Result{Elapsed: 2 * time.Second, Records: 3}
	for i, d := range []time.Duration{10, 20, 30} {
		res.Ack.Record(d * time.Millisecond)
		res.Timeline = append(res.Timeline, Point{At: time.Duration(i+1) * time.Second, Span: time.Second, Records: 1, AckP50: d * time.Millisecond, AckP99: d * time.Millisecond, AckMax: d * time.Millisecond})
	}
	var buf bytes.Buffer
	if err := res.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{"<svg", "Latency over time", "Latency distribution", "</svg>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the SVG has no %q", want)
		}
	}
}
