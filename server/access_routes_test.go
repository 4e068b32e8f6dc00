package server

import (
	"maps"
	"strings"
	"testing"
)

// Every method of every route has an access check: a route without one would be refused to
// every token but the root, silently.
func TestEveryRouteHasAnAccessCheck(t *testing.T) {
	for _, rt := range routes {
		for _, mh := range rt.handlers {
			_, ok := routeChecks[mh.method+" "+rt.name]
			_, group := groupRouteChecks[mh.method+" "+rt.name]
			if !ok && !group {
				t.Errorf("%s %s has no access check", mh.method, rt.name)
			}
		}
	}
	all := maps.Clone(routeChecks)
	maps.Copy(all, groupRouteChecks)
	for k := range all {
		method, name, _ := strings.Cut(k, " ")
		found := false
		for _, rt := range routes {
			for _, mh := range rt.handlers {
				found = found || (rt.name == name && mh.method == method)
			}
		}
		if !found {
			t.Errorf("check %q names no route", k)
		}
	}
}
