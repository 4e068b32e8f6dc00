package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"

	"github.com/sluice-dev/sluice/daemon"
	"github.com/sluice-dev/sluice/objectstore"
)

// Example runs the daemon in process on a memory store, at a port it picks, and appends and
// reads a record through S2's HTTP API.
func Example() {
	ctx := context.Background()
	cfg := daemon.DefaultConfig()
	cfg.Store = objectstore.NewMemStore()
	cfg.Listen = "127.0.0.1:0"
	d, err := daemon.New(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()

	base := "http://" + d.Addr().String()
	call := func(method, path, body string) string {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("S2-Basin", "my-basin")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode/100 != 2 {
			log.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
		}
		return string(b)
	}
	call("POST", "/v1/basins", `{"basin":"my-basin"}`)
	call("POST", "/v1/streams", `{"stream":"events"}`)
	call("POST", "/v1/streams/events/records", `{"records":[{"body":"hello"}]}`)
	var batch struct {
		Records []struct {
			SeqNum uint64 `json:"seq_num"`
			Body   string `json:"body"`
		} `json:"records"`
	}
	if err := json.Unmarshal([]byte(call("GET", "/v1/streams/events/records?seq_num=0", "")), &batch); err != nil {
		log.Fatal(err)
	}
	for _, r := range batch.Records {
		fmt.Println(r.SeqNum, r.Body)
	}

	if err := d.Close(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("closed:", <-ran)
	// Output:
	// 0 hello
	// closed: <nil>
}
