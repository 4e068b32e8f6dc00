package server_test

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/server"
)

// Every path shape is routed to its handlers, a wrong method is answered 405 with the route's
// methods in Allow, and each request is counted under its route's name (unknown when none).
func TestRoutesNameMetricsAndAllowMethods(t *testing.T) {
	for _, c := range []struct {
		method, path string
		hdr          http.Header
		status       int
		allow, route string
	}{
		{"GET", "/v1/basins", nil, 200, "", "/basins"},
		{"DELETE", "/v1/basins", nil, 405, "GET, POST", "/basins"},
		{"GET", "/basins/" + fuzzBasin, nil, 200, "", "/basins/{b}"},
		{"POST", "/v1/basins/" + fuzzBasin + "/", nil, 405, "GET, PATCH, PUT, DELETE", "/basins/{b}"},
		{"GET", "/v1/streams", nil, 200, "", "/streams"},
		{"PUT", "/v1/streams", nil, 405, "GET, POST", "/streams"},
		{"GET", "/v1/streams", http.Header{"S2-Basin": {""}}, 400, "", "/streams"},
		{"GET", "/v1/streams/s", nil, 200, "", "/streams/{s}"},
		{"POST", "/streams/s", nil, 405, "GET, PATCH, PUT, DELETE", "/streams/{s}"},
		{"GET", "/v1/streams/s/records?seq_num=0", nil, 200, "", "/streams/{s}/records"},
		{"DELETE", "/v1/streams/s/records", nil, 405, "GET, POST", "/streams/{s}/records"},
		{"GET", "/v1/streams//records", nil, 422, "", "/streams/{s}/records"},
		{"GET", "/v1/streams/s/records", http.Header{"S2-Format": {"hex"}}, 400, "", "/streams/{s}/records"},
		{"GET", "/v1/streams/s/records/tail", nil, 200, "", "/streams/{s}/records/tail"},
		{"GET", "/v1/streams/s/tail", nil, 200, "", "/streams/{s}/records/tail"},
		{"POST", "/v1/streams/s/tail", nil, 405, "GET", "/streams/{s}/records/tail"},
		{"GET", "/v1/streams/s/other", nil, 404, "", "unknown"},
		{"GET", "/v1/basins/a/b", nil, 404, "", "unknown"},
		{"GET", "/v1", nil, 404, "", "unknown"},
	} {
		reg := prometheus.NewRegistry()
		srv := newEngineServer(t, server.WithRegisterer(reg))
		rec := serve(srv, c.method, c.path, "", c.hdr)
		if rec.Code != c.status || rec.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want %d Allow %q: %s", c.method, c.path, rec.Code,
				rec.Header().Get("Allow"), c.status, c.allow, rec.Body.String())
		}
		if got := lastRouteCounted(t, reg); got != c.route {
			t.Errorf("%s %s: counted under route %q, want %q", c.method, c.path, got, c.route)
		}
	}
}

// lastRouteCounted returns the route of the request counted beyond newEngineServer's setup.
func lastRouteCounted(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	setup := map[string]float64{"/basins 201": 1, "/streams 201": 1, "/streams/{s}/records 200": 1}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_api_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var route, status string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "route":
					route = l.GetValue()
				case "status":
					status = l.GetValue()
				}
			}
			if m.GetCounter().GetValue() > setup[route+" "+status] {
				return route
			}
		}
	}
	return ""
}
