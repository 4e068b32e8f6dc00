package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestConfigValidateReportsEveryProblem: each bad field is named in one error, and a good
// config passes, including the largest record and an append that just fits.
func TestConfigValidateReportsEveryProblem(t *testing.T) {
	bad := Config{Producers: 0, Rate: -1, RecordSize: MaxRecordSize + 1, Duration: 0, AppendSize: 1001, DrainTimeout: -time.Second}
	err := bad.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Validate = %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"producers 0", "rate -1", "record size", "duration 0s", "append size 1001", "drain timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate's error %q does not name %q", err, want)
		}
	}
	tooBig := Config{Producers: 1, RecordSize: 2000, Duration: time.Second, AppendSize: 1000}
	if err := tooBig.Validate(); err == nil || !strings.Contains(err.Error(), "exceed") {
		t.Errorf("1000 records of 2000 bytes per append: Validate = %v, want the append limit named", err)
	}
	for _, good := range []Config{
		{Producers: 1, RecordSize: MaxRecordSize, Duration: time.Second},
		{Producers: 1, RecordSize: MaxRecordSize, Duration: time.Second, AppendSize: 1},
		{Producers: 8, Rate: 0.5, RecordSize: 1, Duration: time.Millisecond, AppendSize: 1000},
	} {
		if err := good.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", good, err)
		}
	}
}
