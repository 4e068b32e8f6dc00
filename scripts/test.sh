#!/usr/bin/env bash
# The one test command for sluice (README.md "Testing"; .ci/run calls it).
#
#   bash scripts/test.sh
#
# It installs versitygw v1.8.0 into the Go bin directory if it is not there yet (a cold build
# takes about 3 minutes; later runs reuse the binary), starts it on a free 127.0.0.1 port with
# a throwaway posix root, points the S3 tests at it (SLUICE_TEST_S3_URL, AWS_* variables), then
# checks gofmt, runs go vet and go test (with -race for RACE_PKGS). The server is always stopped
# on exit. Under CI=true a server that cannot be installed or started fails the run; otherwise
# the S3 tests are skipped with a warning.
#
# The same goes for the cloud emulators: fake-gcs-server (a Go module, installed like
# versitygw) for Google Cloud Storage (SLUICE_TEST_GCS_URL, STORAGE_EMULATOR_HOST), and Azurite
# (npm, pinned by scripts/azurite/package-lock.json) for Azure Blob Storage
# (SLUICE_TEST_AZURE_URL, AZURE_STORAGE_CONNECTION_STRING).
#
# Extending: write a function and add its name to PRE_TEST_STEPS (setup, e.g. an npm install)
# or POST_TEST_STEPS (extra checks). Add packages with concurrency tests to RACE_PKGS.
set -euo pipefail

cd "$(dirname "$0")/.."

VERSITYGW_VERSION=v1.8.0
# fake-gcs-server v1.56.1 honours ifGenerationMatch, 0 (create-only) included.
FAKE_GCS_VERSION=v1.56.1
# Azurite's version is in scripts/azurite/package-lock.json (3.35.0: the newest for Node 20).
# Azurite's well-known development account and key (public, in Azure's documentation).
AZURITE_ACCOUNT=devstoreaccount1
AZURITE_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
# Packages tested with -race (go list patterns). Extend as packages gain concurrency tests.
RACE_PKGS=(./objectstore/... ./manifest/... ./producer/... ./committer/... ./server/... ./consumer/... ./gc/... ./engine/... ./catalog/... ./sim/...)
# Extra steps, run in order (function names).
PRE_TEST_STEPS=(install_s2_sdk)
POST_TEST_STEPS=()
GO_TEST_FLAGS=(-count=1 -timeout=12m)

log() { printf '\n==> %s\n' "$*"; }
warn() { printf '\n!!! %s\n' "$*" >&2; }
ci() { [[ "${CI:-}" == "true" ]]; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/sluice-test.XXXXXX")"
VGW_PID=""
GCS_PID=""
AZURITE_PID=""
stop_pid() {
	if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
		kill "$1" 2>/dev/null || true
		wait "$1" 2>/dev/null || true
	fi
}
cleanup() {
	stop_pid "$VGW_PID"
	stop_pid "$GCS_PID"
	stop_pid "$AZURITE_PID"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

GOBIN_DIR="$(go env GOBIN)"
[[ -n "$GOBIN_DIR" ]] || GOBIN_DIR="$(go env GOPATH)/bin"
VGW="$GOBIN_DIR/versitygw"
FAKE_GCS="$GOBIN_DIR/fake-gcs-server"

install_versitygw() {
	if [[ -x "$VGW" ]] && go version -m "$VGW" 2>/dev/null | grep -q "mod[[:space:]]*github.com/versity/versitygw[[:space:]]*$VERSITYGW_VERSION[[:space:]]"; then
		echo "versitygw $VERSITYGW_VERSION: cached at $VGW"
		return 0
	fi
	log "installing versitygw $VERSITYGW_VERSION (cold build takes about 3 minutes)"
	go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
}

# S2's TypeScript SDK, pinned by scripts/s2-sdk/package-lock.json, for the API compatibility
# check (servertest's SDKCompat, which fails under CI=true without it).
install_s2_sdk() {
	if ! command -v npm >/dev/null 2>&1; then
		if ci; then
			warn "CI=true and npm is missing: the S2 SDK compatibility check cannot run"
			exit 1
		fi
		warn "npm missing: the S2 SDK compatibility check will be SKIPPED"
		return 0
	fi
	npm ci --prefix scripts/s2-sdk --no-audit --no-fund
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_versitygw() {
	local access="sluicetest" secret="sluicetest-secret-$RANDOM$RANDOM"
	local attempt port
	for attempt in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 30000))
		port_free "$port" || continue
		mkdir -p "$WORK/vgw-root"
		ROOT_ACCESS_KEY="$access" ROOT_SECRET_KEY="$secret" \
			"$VGW" --port "127.0.0.1:$port" --keep-alive posix "$WORK/vgw-root" >"$WORK/versitygw.log" 2>&1 &
		VGW_PID=$!
		local i
		for i in $(seq 1 100); do
			if ! kill -0 "$VGW_PID" 2>/dev/null; then
				break # died, most likely the port was taken meanwhile; try another
			fi
			if ! port_free "$port"; then
				export SLUICE_TEST_S3_URL="s3://sluice-test/run-$$?endpoint=http://127.0.0.1:$port&region=us-east-1&path_style=true"
				export AWS_ACCESS_KEY_ID="$access" AWS_SECRET_ACCESS_KEY="$secret" AWS_REGION=us-east-1
				export AWS_EC2_METADATA_DISABLED=true
				unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3
				echo "versitygw $VERSITYGW_VERSION listening on http://127.0.0.1:$port (pid $VGW_PID, log $WORK/versitygw.log)"
				return 0
			fi
			sleep 0.1
		done
		kill "$VGW_PID" 2>/dev/null || true
		wait "$VGW_PID" 2>/dev/null || true
		VGW_PID=""
		echo "versitygw did not come up on port $port (attempt $attempt):"
		tail -5 "$WORK/versitygw.log" || true
	done
	return 1
}

install_fake_gcs() {
	if [[ -x "$FAKE_GCS" ]] && go version -m "$FAKE_GCS" 2>/dev/null | grep -q "mod[[:space:]]*github.com/fsouza/fake-gcs-server[[:space:]]*$FAKE_GCS_VERSION[[:space:]]"; then
		echo "fake-gcs-server $FAKE_GCS_VERSION: cached at $FAKE_GCS"
		return 0
	fi
	log "installing fake-gcs-server $FAKE_GCS_VERSION"
	go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION"
}

install_azurite() {
	if ! command -v npm >/dev/null 2>&1; then
		echo "npm is missing"
		return 1
	fi
	npm ci --prefix scripts/azurite --no-audit --no-fund >"$WORK/azurite-install.log" 2>&1 || {
		tail -20 "$WORK/azurite-install.log"
		return 1
	}
	echo "azurite $(node -p 'require("./scripts/azurite/node_modules/azurite/package.json").version')"
}

# start_server NAME LOG CMD...: starts CMD (whose arguments may contain @PORT@) on a free
# 127.0.0.1 port, trying up to five, and sets STARTED_PID and STARTED_PORT once the port
# answers.
start_server() {
	local name="$1" logf="$2" attempt port i
	shift 2
	for attempt in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 30000))
		port_free "$port" || continue
		"${@//@PORT@/$port}" >"$logf" 2>&1 &
		STARTED_PID=$!
		for i in $(seq 1 150); do
			if ! kill -0 "$STARTED_PID" 2>/dev/null; then
				break # died, most likely the port was taken meanwhile; try another
			fi
			if ! port_free "$port"; then
				STARTED_PORT=$port
				echo "$name listening on http://127.0.0.1:$port (pid $STARTED_PID, log $logf)"
				return 0
			fi
			sleep 0.1
		done
		stop_pid "$STARTED_PID"
		echo "$name did not come up on port $port (attempt $attempt):"
		tail -5 "$logf" || true
	done
	STARTED_PID=""
	return 1
}

start_fake_gcs() {
	start_server fake-gcs-server "$WORK/fake-gcs.log" \
		"$FAKE_GCS" -scheme http -host 127.0.0.1 -port @PORT@ -public-host 127.0.0.1:@PORT@ -backend memory -log-level warn || return 1
	GCS_PID=$STARTED_PID
	export STORAGE_EMULATOR_HOST="127.0.0.1:$STARTED_PORT"
	export SLUICE_TEST_GCS_URL="gs://sluice-test/run-$$"
}

start_azurite() {
	# --skipApiVersionCheck: the Azure SDK sends an API version newer than Azurite knows.
	start_server azurite "$WORK/azurite.log" \
		node scripts/azurite/node_modules/azurite/dist/src/blob/main.js --blobHost 127.0.0.1 --blobPort @PORT@ \
		--inMemoryPersistence --skipApiVersionCheck --disableTelemetry --silent || return 1
	AZURITE_PID=$STARTED_PID
	export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=$AZURITE_ACCOUNT;AccountKey=$AZURITE_KEY;BlobEndpoint=http://127.0.0.1:$STARTED_PORT/$AZURITE_ACCOUNT;"
	export SLUICE_TEST_AZURE_URL="azblob://sluice-test/run-$$"
}

log "S3 test server"
S3_READY=false
if install_versitygw && start_versitygw; then
	S3_READY=true
elif ci; then
	warn "CI=true and versitygw could not be installed or started: failing"
	exit 1
else
	warn "versitygw unavailable: the S3 conformance tests will be SKIPPED (they fail under CI=true)"
	unset SLUICE_TEST_S3_URL
fi

log "Google Cloud Storage emulator"
GCS_READY=false
if install_fake_gcs && start_fake_gcs; then
	GCS_READY=true
elif ci; then
	warn "CI=true and fake-gcs-server could not be installed or started: failing"
	exit 1
else
	warn "fake-gcs-server unavailable: the GCS tests will be SKIPPED (they fail under CI=true)"
	unset SLUICE_TEST_GCS_URL STORAGE_EMULATOR_HOST
fi

log "Azure Blob Storage emulator"
AZURE_READY=false
if install_azurite && start_azurite; then
	AZURE_READY=true
elif ci; then
	warn "CI=true and Azurite could not be installed or started: failing"
	exit 1
else
	warn "Azurite unavailable: the Azure tests will be SKIPPED (they fail under CI=true)"
	unset SLUICE_TEST_AZURE_URL AZURE_STORAGE_CONNECTION_STRING
fi

for step in ${PRE_TEST_STEPS[@]+"${PRE_TEST_STEPS[@]}"}; do
	log "$step"
	"$step"
done

mapfile -t ALL_PKGS < <(go list ./...)
mapfile -t RACE_LIST < <(go list "${RACE_PKGS[@]}")
OTHER_PKGS=()
for p in "${ALL_PKGS[@]}"; do
	skip=false
	for r in "${RACE_LIST[@]}"; do [[ "$p" == "$r" ]] && skip=true; done
	$skip || OTHER_PKGS+=("$p")
done

log "gofmt"
# Every Go file git knows or would add (node_modules and other ignored trees stay out).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t GO_FILES < <(git ls-files -co --exclude-standard -- '*.go')
else
	mapfile -t GO_FILES < <(find . -name '*.go' -not -path '*/node_modules/*' -not -path './.git/*')
fi
unformatted="$(gofmt -l "${GO_FILES[@]}")"
if [[ -n "$unformatted" ]]; then
	echo "not gofmt-ed:"
	echo "$unformatted"
	exit 1
fi
echo "ok"

log "go vet ./..."
go vet ./...
echo "ok"

# The code must build, and vet, on other architectures too (32-bit ints included).
log "go vet ./... for 386 and arm64"
GOARCH=386 go vet ./...
GOARCH=arm64 go vet ./...
echo "ok"

# A slim binary leaves Google's client out (storeurl's gcs_off.go): it must keep building.
log "go vet -tags sluice_nogcs (cmd/sluice without Google Cloud Storage)"
go vet -tags sluice_nogcs ./objectstore/storeurl/ ./cmd/sluice/
echo "ok"

if $S3_READY; then
	log "S3 conformance suite against versitygw $VERSITYGW_VERSION ($SLUICE_TEST_S3_URL)"
	# Verbose, so the log shows each S3 test running (not skipped) against the real server.
	go test -race "${GO_TEST_FLAGS[@]}" -v -run '^TestS3Conformance$' ./objectstore/s3/ >"$WORK/s3.out" 2>&1 || {
		cat "$WORK/s3.out"
		exit 1
	}
	grep -E '^(\s*--- (PASS|FAIL|SKIP)|ok|FAIL)' "$WORK/s3.out"
	if grep -q -- '--- SKIP: TestS3Conformance' "$WORK/s3.out"; then
		warn "TestS3Conformance was skipped although versitygw is running"
		exit 1
	fi
fi

# conformance NAME TEST PKG: runs the conformance suite TEST of PKG verbose, so the log shows
# each test running (not skipped) against the real server.
conformance() {
	local name="$1" test="$2" pkg="$3"
	log "$name conformance suite ($test)"
	go test -race "${GO_TEST_FLAGS[@]}" -v -run "^$test\$" "$pkg" >"$WORK/$test.out" 2>&1 || {
		cat "$WORK/$test.out"
		exit 1
	}
	grep -E '^(\s*--- (PASS|FAIL|SKIP)|ok|FAIL)' "$WORK/$test.out"
	if grep -q -- "--- SKIP: $test" "$WORK/$test.out"; then
		warn "$test was skipped although its server is running"
		exit 1
	fi
}
SKIPPED_SUITES=()
if $GCS_READY; then
	conformance "Google Cloud Storage (fake-gcs-server $FAKE_GCS_VERSION)" TestGCSConformance ./objectstore/gcs/
	SKIPPED_SUITES+=(TestGCSConformance)
fi
if $AZURE_READY; then
	conformance "Azure Blob Storage (Azurite)" TestAzureConformance ./objectstore/azblob/
	SKIPPED_SUITES+=(TestAzureConformance)
fi

# The conformance suites already ran above; the other tests (including the S3 error-mapping
# tests, which use a fake server) run here.
$S3_READY && SKIPPED_SUITES+=(TestS3Conformance)
SKIP=()
if ((${#SKIPPED_SUITES[@]} > 0)); then
	SKIP=(-skip "^($(IFS='|'; echo "${SKIPPED_SUITES[*]}"))\$")
fi
log "go test -race ${RACE_PKGS[*]}"
go test -race "${GO_TEST_FLAGS[@]}" "${SKIP[@]}" "${RACE_LIST[@]}"

if ((${#OTHER_PKGS[@]} > 0)); then
	log "go test (other packages)"
	go test "${GO_TEST_FLAGS[@]}" "${OTHER_PKGS[@]}"
fi

for step in ${POST_TEST_STEPS[@]+"${POST_TEST_STEPS[@]}"}; do
	log "$step"
	"$step"
done

missing=()
$S3_READY || missing+=("S3 (versitygw)")
$GCS_READY || missing+=("GCS (fake-gcs-server)")
$AZURE_READY || missing+=("Azure (Azurite)")
if ((${#missing[@]} == 0)); then
	log "all checks passed (conformance ran against versitygw $VERSITYGW_VERSION, fake-gcs-server $FAKE_GCS_VERSION and Azurite)"
else
	log "all checks passed, but WITHOUT the tests of: ${missing[*]}"
fi
