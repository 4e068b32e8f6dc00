#!/usr/bin/env bash
# Many writers on one stream, on an S3 server with a cloud's round trip: one daemon against
# four behind a balancer (sluice bench --endpoint A,B,C,D), and N producer processes
# through one committer (go test -bench ProducerProcesses ./committer).
#
#   bash scripts/bench-daemons.sh [seconds per run, default 15]
#
# It starts versitygw (installed as scripts/test.sh does) on a throwaway directory and
# toxiproxy in front of it adding 15 ms each way (about S3 Standard's round trip); every
# daemon and producer goes through the proxy. It prints each run's figures and the ratios
# of the four daemons' p99 to one's. Needs no internet beyond the Go module proxy.
set -euo pipefail
cd "$(dirname "$0")/.."

DUR="${1:-15}"
VERSITYGW_VERSION=v1.8.0
TOXIPROXY_VERSION=v2.5.0
GOBIN_DIR="$(go env GOBIN)"
[[ -n "$GOBIN_DIR" ]] || GOBIN_DIR="$(go env GOPATH)/bin"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench.XXXXXX")"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 30000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}
wait_port() {
	for _ in $(seq 1 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "nothing listens on port $1" >&2
	return 1
}

[[ -x "$GOBIN_DIR/versitygw" ]] || go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
# toxiproxy's server installs as "server"; keep it under its own name.
if [[ ! -x "$GOBIN_DIR/toxiproxy-server" ]]; then
	GOBIN="$WORK/tp" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION"
	mv "$WORK/tp/server" "$GOBIN_DIR/toxiproxy-server"
fi
go build -o "$WORK/sluice" ./cmd/sluice

# The server's objects go to memory (/dev/shm) where there is one: hundreds of uploads a
# second, each fsynced to this machine's one disk, measure the disk, not sluice (an object
# store spreads them over many).
VGW_ROOT="$WORK/vgw"
if [[ -d /dev/shm && -w /dev/shm ]]; then
	VGW_ROOT="$(mktemp -d /dev/shm/sluice-bench.XXXXXX)"
	trap 'cleanup; rm -rf "$VGW_ROOT"' EXIT
fi
S3_PORT=$(free_port)
mkdir -p "$VGW_ROOT/bench"
ROOT_ACCESS_KEY=bench ROOT_SECRET_KEY=benchsecret "$GOBIN_DIR/versitygw" --port "127.0.0.1:$S3_PORT" --keep-alive posix "$VGW_ROOT" >"$WORK/vgw.log" 2>&1 &
PIDS+=($!)
TP_PORT=$(free_port)
"$GOBIN_DIR/toxiproxy-server" -host 127.0.0.1 -port "$TP_PORT" >"$WORK/toxiproxy.log" 2>&1 &
PIDS+=($!)
wait_port "$S3_PORT"
wait_port "$TP_PORT"
PROXY_PORT=$(free_port)
api="http://127.0.0.1:$TP_PORT"
curl -sf -X POST "$api/proxies" -d "{\"name\":\"s3\",\"listen\":\"127.0.0.1:$PROXY_PORT\",\"upstream\":\"127.0.0.1:$S3_PORT\"}" >/dev/null
for dir in upstream downstream; do
	curl -sf -X POST "$api/proxies/s3/toxics" -d "{\"type\":\"latency\",\"stream\":\"$dir\",\"attributes\":{\"latency\":15}}" >/dev/null
done

export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=benchsecret AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3
STORE="s3://bench/daemons?endpoint=http://127.0.0.1:$PROXY_PORT&region=us-east-1&path_style=true"
echo "versitygw on :$S3_PORT behind toxiproxy on :$PROXY_PORT (+15 ms each way)"

# start_daemons N: N daemons on the store; prints their URLs, comma-separated.
start_daemons() {
	local urls=() i port
	for i in $(seq 1 "$1"); do
		port=$(free_port)
		"$WORK/sluice" serve --store "$STORE" --listen "127.0.0.1:$port" --no-gc >"$WORK/serve-$1-$i.log" 2>&1 &
		PIDS+=($!)
		wait_port "$port"
		urls+=("http://127.0.0.1:$port")
	done
	(IFS=,; echo "${urls[*]}")
}
stop_daemons() {
	pkill -f "$WORK/sluice serve" 2>/dev/null || true
	sleep 1
}

# As the issue measured: 4 clients, 4 appends in flight each (16 producers), 100 records
# of 1 KiB per append.
run_bench() {
	"$WORK/sluice" bench --endpoint "$1" --producers 16 --append-size 100 --record-size 1024 \
		--duration "${DUR}s" --json 2>"$WORK/bench.err" || { cat "$WORK/bench.err" >&2; return 1; }
}
field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p"; }

ONE=$(start_daemons 1)
one=$(run_bench "$ONE")
stop_daemons
FOUR=$(start_daemons 4)
four=$(run_bench "$FOUR")
stop_daemons

printf '\n%-12s %12s %10s %10s %10s\n' daemons records/s ack_p50 ack_p99 e2e_p99
for row in "1:$one" "4:$four"; do
	n=${row%%:*} j=${row#*:}
	printf '%-12s %12.0f %10.1f %10.1f %10.1f\n' "$n" "$(field records_per_s <<<"$j")" "$(field ack_p50_ms <<<"$j")" \
		"$(field ack_p99_ms <<<"$j")" "$(field e2e_p99_ms <<<"$j")"
done
awk -v a="$(field ack_p99_ms <<<"$four")" -v b="$(field ack_p99_ms <<<"$one")" 'BEGIN { printf "ack p99, four daemons against one: %.2fx\n", a / b }'

echo
echo "N producer processes through one committer (the benchmark adds the 30 ms round trip):"
SLUICE_TEST_S3_URL="s3://bench/processes?endpoint=http://127.0.0.1:$S3_PORT&region=us-east-1&path_style=true" \
	go test -run '^$' -bench ProducerProcesses -benchtime 1x ./committer | grep -E '^Benchmark'
