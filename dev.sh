#!/usr/bin/env bash
# dev.sh: the commands of the README.
#
#   ./dev.sh run     start errata on a throwaway PostgreSQL with demo data
#   ./dev.sh test    run every test (go vet, builds for other systems,
#                    go test -race ./...)
#   ./dev.sh bench   measure errata against its floor and print the figures
#
# All use DATABASE_URL when it is set. Otherwise they start a throwaway
# PostgreSQL cluster in a temporary folder (installing PostgreSQL with
# apt-get when it is missing) and remove it on exit.
set -euo pipefail
cd "$(dirname "$0")"

log() { echo "dev.sh: $*" >&2; }

as_postgres() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_bindir() {
	local d
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(readlink -f "$(command -v initdb)")"
		return
	fi
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

install_postgres() {
	log "PostgreSQL is not installed; installing it with apt-get"
	local sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
}

# start_postgres starts a throwaway cluster and exports DATABASE_URL.
start_postgres() {
	local bindir
	bindir=$(pg_bindir || true)
	if [ -z "$bindir" ]; then
		install_postgres
		bindir=$(pg_bindir)
	fi
	PGTMP=$(mktemp -d /tmp/errata-pg.XXXXXX)
	chmod 755 "$PGTMP"
	[ "$(id -u)" = 0 ] && chown postgres: "$PGTMP"
	trap stop_postgres EXIT
	as_postgres "$bindir/initdb" -D "$PGTMP/data" -U postgres -A trust -E UTF8 --no-sync >"$PGTMP/initdb.log" 2>&1 ||
		{ cat "$PGTMP/initdb.log" >&2; exit 1; }
	# A throwaway cluster: durability settings off for speed, a Unix socket
	# in the folder and no TCP port, so parallel runs never collide.
	as_postgres "$bindir/pg_ctl" -D "$PGTMP/data" -l "$PGTMP/postgres.log" -w -s start \
		-o "-c listen_addresses='' -k $PGTMP -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" ||
		{ cat "$PGTMP/postgres.log" >&2; exit 1; }
	PG_BINDIR=$bindir
	export DATABASE_URL="postgres://postgres@/postgres?host=$PGTMP&sslmode=disable"
	log "throwaway PostgreSQL in $PGTMP"
}

stop_postgres() {
	if [ -n "${PGTMP:-}" ] && [ -d "$PGTMP/data" ]; then
		as_postgres "$PG_BINDIR/pg_ctl" -D "$PGTMP/data" -m immediate -s stop >/dev/null 2>&1 || true
		rm -rf "$PGTMP"
	fi
}

apt_install() {
	local sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	if [ -z "${APT_UPDATED:-}" ]; then
		$sudo apt-get update -qq
		APT_UPDATED=1
	fi
	log "installing $* with apt-get"
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

# install_js_tools brings the resolution API's oracles from npm: esbuild and
# terser minify an app with source maps; npm source-map and
# @jridgewell/trace-mapping resolve its frames as errata must (see
# docs/testing.md), and trace-mapping is BenchmarkSymbolicateJS's peer.
install_js_tools() {
	local tools=${ERRATA_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/errata-tools} pkg name
	for pkg in esbuild@0.24.2 terser@5.36.0 source-map@0.7.4 @jridgewell/trace-mapping@0.3.25; do
		name=${pkg%@*}
		name=${name##*/}-${pkg##*@}
		if [ ! -d "$tools/$name/node_modules/${pkg%@*}" ]; then
			command -v npm >/dev/null 2>&1 || apt_install npm
			log "installing $pkg from npm"
			mkdir -p "$tools/$name"
			(cd "$tools/$name" && npm install --no-audit --no-fund --silent "$pkg" >/dev/null)
		fi
	done
	export ESBUILD=$tools/esbuild-0.24.2/node_modules/.bin/esbuild
	export TERSER=$tools/terser-5.36.0/node_modules/.bin/terser
	export NODE_SOURCE_MAP=$tools/source-map-0.7.4/node_modules/source-map
	export NODE_TRACE_MAPPING=$tools/trace-mapping-0.3.25/node_modules/@jridgewell/trace-mapping
}

# install_page_tools brings what the browser tests of the pages
# (pages_test.go) drive Chromium with: playwright-core, which never
# downloads a browser of its own (it is given Debian's chromium),
# axe-core, which checks each page against WCAG 2.1 A and AA, and jsQR
# with pngjs, which read the TOTP QR code from a screenshot.
install_page_tools() {
	local tools=${ERRATA_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/errata-tools} dir=pages-2 pkg
	for pkg in playwright-core axe-core jsqr pngjs; do
		if [ ! -d "$tools/$dir/node_modules/$pkg" ]; then
			command -v npm >/dev/null 2>&1 || apt_install npm
			log "installing playwright-core, axe-core, jsqr and pngjs from npm"
			mkdir -p "$tools/$dir"
			(cd "$tools/$dir" && npm install --no-audit --no-fund --silent \
				playwright-core@1.65.1 axe-core@4.14.1 jsqr@1.4.0 pngjs@7.0.0 >/dev/null)
			break
		fi
	done
	export PLAYWRIGHT_CORE=$tools/$dir/node_modules/playwright-core
	export AXE_CORE=$tools/$dir/node_modules/axe-core/axe.min.js
	export JSQR=$tools/$dir/node_modules/jsqr
	export PNGJS=$tools/$dir/node_modules/pngjs
}

# install_native_tools brings the compilers, binutils and oracles of the
# native resolution tests (native_test.go): gcc, clang-14 and lld-14 build
# the fixtures, objcopy and strip split them, llvm-symbolizer, llvm-objdump
# and gdb are the answers errata's are held against, eu-addr2line a second
# vote.
install_native_tools() {
	local pkgs="" t
	for t in gcc:gcc g++:g++ clang-14:clang-14 ld.lld-14:lld-14 ld64.lld-14:lld-14 objcopy:binutils llvm-symbolizer:llvm llvm-objdump:llvm dsymutil-14:llvm-14 llvm-dwarfdump-14:llvm-14 lld-link-14:lld-14 nm:binutils readelf:binutils gdb:gdb eu-addr2line:elfutils; do
		command -v "${t%%:*}" >/dev/null 2>&1 || pkgs="$pkgs ${t#*:}"
	done
	[ -z "$pkgs" ] || apt_install $pkgs
}

# install_test_tools brings the real peers the end-to-end tests drive and
# tells the tests where they are: sentry-cli 1.x, 2.x and 3.x from npm, an SMTP
# server (Debian's python3-aiosmtpd), headless Chromium, the OpenAPI 3.1
# validator that checks handlers/openapi.json (npm), promtool, which
# checks the /metrics text, versitygw, an S3-compatible server, and the
# oracles of the resolution API: esbuild, terser, npm source-map and
# @jridgewell/trace-mapping, a JDK and Debian's proguard-cli.
install_test_tools() {
	local tools=${ERRATA_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/errata-tools} v bin
	for v in 2.58.6 3.8.0; do
		bin=$tools/sentry-cli-$v/node_modules/@sentry/cli-linux-x64/bin/sentry-cli
		if [ ! -x "$bin" ]; then
			command -v npm >/dev/null 2>&1 || apt_install npm
			log "installing sentry-cli $v from npm"
			mkdir -p "$tools/sentry-cli-$v"
			(cd "$tools/sentry-cli-$v" && npm install --no-audit --no-fund --silent "@sentry/cli@$v" >/dev/null)
		fi
		case $v in 2.*) export SENTRY_CLI_2=$bin ;; 3.*) export SENTRY_CLI_3=$bin ;; esac
	done
	# sentry-cli 1.x predates artifact bundles: it exercises the spec's
	# releases/{version}/assemble/. @sentry/cli@1.x downloads its binary at
	# install time, which cannot work here; the platform package ships it.
	v=1.77.2
	bin=$tools/sentry-cli-$v/node_modules/@sentry/cli-linux-x64/bin/sentry-cli
	if [ ! -x "$bin" ]; then
		command -v npm >/dev/null 2>&1 || apt_install npm
		log "installing sentry-cli $v from npm"
		mkdir -p "$tools/sentry-cli-$v"
		(cd "$tools/sentry-cli-$v" && npm install --no-audit --no-fund --silent "@sentry/cli-linux-x64@$v" >/dev/null)
	fi
	export SENTRY_CLI_1=$bin
	# validate-api checks a document against the official OpenAPI 3.1
	# schema and checks its references.
	v=2.11.0
	bin=$tools/openapi-schema-validator-$v/node_modules/.bin/validate-api
	if [ ! -x "$bin" ]; then
		command -v npm >/dev/null 2>&1 || apt_install npm
		log "installing @seriousme/openapi-schema-validator $v from npm"
		mkdir -p "$tools/openapi-schema-validator-$v"
		(cd "$tools/openapi-schema-validator-$v" &&
			npm install --no-audit --no-fund --silent "@seriousme/openapi-schema-validator@$v" >/dev/null)
	fi
	export OPENAPI_VALIDATOR=$bin
	install_js_tools
	# A JDK and Debian's ProGuard 6.2.2 (with its retrace) obfuscate a Java
	# program for symbolicate-jvm/'s end-to-end test.
	command -v javac >/dev/null 2>&1 || apt_install openjdk-17-jdk-headless
	command -v proguard >/dev/null 2>&1 || apt_install proguard-cli
	PROGUARD=$(command -v proguard)
	export PROGUARD
	export PROGUARD_RETRACE=/usr/share/java/proguard-retrace.jar
	# Debian's own python3, whatever python3 comes first on PATH.
	/usr/bin/python3 -c 'import aiosmtpd' >/dev/null 2>&1 || apt_install python3-aiosmtpd
	export SMTP_PYTHON=/usr/bin/python3
	command -v chromium >/dev/null 2>&1 || apt_install chromium
	install_page_tools
	# The debuginfod clients and the ELF tools of the symbol route tests.
	command -v debuginfod-find >/dev/null 2>&1 || apt_install debuginfod elfutils
	command -v gdb >/dev/null 2>&1 || apt_install gdb
	command -v valgrind >/dev/null 2>&1 || apt_install valgrind
	command -v objcopy >/dev/null 2>&1 || apt_install binutils
	command -v gcc >/dev/null 2>&1 || apt_install gcc
	command -v llvm-symbolizer >/dev/null 2>&1 || apt_install llvm
	# A PE with its PDB and a Mach-O with its dSYM, built on Linux.
	command -v clang-14 >/dev/null 2>&1 || apt_install clang-14
	command -v lld-link-14 >/dev/null 2>&1 || apt_install lld-14
	command -v dsymutil-14 >/dev/null 2>&1 || apt_install llvm-14
	# llvm-lipo-14 joins two architectures' dSYMs into a fat one.
	command -v llvm-lipo-14 >/dev/null 2>&1 || apt_install llvm-14
	install_native_tools
	CHROMIUM=$(command -v chromium)
	export CHROMIUM
	# promtool is taken out of Debian's prometheus package, which is not
	# installed: installing it would start a Prometheus server.
	PROMTOOL=$(command -v promtool || echo "$tools/prometheus/usr/bin/promtool")
	if [ ! -x "$PROMTOOL" ]; then
		local sudo="" deb
		[ "$(id -u)" = 0 ] || sudo="sudo"
		if [ -z "${APT_UPDATED:-}" ]; then
			$sudo apt-get update -qq
			APT_UPDATED=1
		fi
		log "extracting promtool from Debian's prometheus package"
		deb=$(mktemp -d)
		(cd "$deb" && apt-get download -qq -o APT::Sandbox::User=root prometheus >/dev/null)
		mkdir -p "$tools/prometheus"
		dpkg-deb --fsys-tarfile "$deb"/prometheus_*.deb | tar -x -C "$tools/prometheus" ./usr/bin/promtool
		rm -rf "$deb"
	fi
	export PROMTOOL
	install_versitygw
}

# install_versitygw brings versitygw, the S3-compatible server that the
# blob-store tests and benchmarks run against (store/s3); it checks every
# request's signature.
install_versitygw() {
	local tools=${ERRATA_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/errata-tools} v=1.8.0
	local bin=$tools/versitygw-$v/versitygw
	if [ ! -x "$bin" ]; then
		log "installing versitygw $v with go install"
		GOBIN=$tools/versitygw-$v go install "github.com/versity/versitygw/cmd/versitygw@v$v"
	fi
	export VERSITYGW=$bin
}

# build_static builds errata as the Dockerfile does: static (no cgo),
# -trimpath, the version stamped from git. ops_test.go checks the binary
# that ERRATA_BIN names and its version, ERRATA_VERSION; the tests that
# bound the server's memory run it, as shipped, instead of a race build.
build_static() {
	ERRATA_VERSION=$(git describe --always --dirty 2>/dev/null || echo devel)
	BINTMP=$(mktemp -d /tmp/errata-bin.XXXXXX)
	trap 'rm -rf "$BINTMP"; stop_postgres' EXIT
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$ERRATA_VERSION" -o "$BINTMP/errata" .
	export ERRATA_BIN=$BINTMP/errata ERRATA_VERSION
	log "static binary $ERRATA_VERSION: $(wc -c <"$ERRATA_BIN") bytes"
}

# install_bench_tools brings what the benchmarks drive besides PostgreSQL:
# wrk from Debian, and pgbench, which comes with PostgreSQL's server package.
install_bench_tools() {
	command -v wrk >/dev/null 2>&1 || apt_install wrk
	WRK=$(command -v wrk)
	local bindir
	bindir=$(pg_bindir || true)
	if [ -z "$bindir" ] || [ ! -x "$bindir/pgbench" ]; then
		install_postgres
		bindir=$(pg_bindir)
	fi
	PGBENCH=$bindir/pgbench
	command -v sha1sum >/dev/null 2>&1 || apt_install coreutils
	# BenchmarkDebuginfod's reference server and fixture.
	command -v debuginfod >/dev/null 2>&1 || apt_install debuginfod
	command -v gcc >/dev/null 2>&1 || apt_install gcc
	command -v objcopy >/dev/null 2>&1 || apt_install binutils
	install_versitygw
	install_js_tools
	export WRK PGBENCH
}

# machine describes where the figures come from.
machine() {
	local cpu
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	echo "Machine: ${cpu:-unknown CPU}, $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1e6}' /proc/meminfo) RAM," \
		"$(uname -sr); $(go version | cut -d' ' -f3); PostgreSQL $("$PGBENCH" --version | awk '{print $3}');" \
		"$(wrk --version 2>&1 | head -n 1 | cut -d' ' -f1-2)."
}

# run_bench runs the benchmarks on the seeded database errata_bench and
# prints, at the end, the markdown tables of their figures.
run_bench() {
	local log summary
	log=$(mktemp "${TMPDIR:-/tmp}/errata-bench.XXXXXX")
	summary=${TMPDIR:-/tmp}/errata-bench-summary.md
	log "benchmark output in $log"
	# Endpoints against their floor (this also seeds errata_bench), then
	# the process-level measurements: start-up, load and assembly.
	# BENCH_COUNT is the endpoint benchmark's rounds (3 by default).
	go test -run '^$' -bench . -benchmem -count 1 -timeout 60m ./handlers/ | tee "$log"
	go test -run '^$' -bench . -benchtime 1x -timeout 60m . | tee -a "$log"
	{
		echo "Figures of \`./dev.sh bench\` ($(date -u +%Y-%m-%d))."
		echo "$(machine)"
		awk '/^### / {print ""; print; print ""} /^\|/ {print} /^(Targets|CPU)/ {print ""; print}' "$log"
	} >"$summary"
	echo
	cat "$summary"
	log "summary written to $summary"
}

cmd=${1:-}
case "$cmd" in
run)
	shift
	[ -n "${DATABASE_URL:-}" ] || start_postgres
	go build -ldflags "-X main.version=$(git describe --always --dirty 2>/dev/null || echo devel)" -o "${TMPDIR:-/tmp}/errata-dev" .
	ADDR=${ADDR:-127.0.0.1:8000} "${TMPDIR:-/tmp}/errata-dev" dev "$@"
	;;
test)
	shift
	[ -n "${DATABASE_URL:-}" ] || start_postgres
	# The fault tests run a cluster of their own, which they stop and start.
	PG_BINDIR=${PG_BINDIR:-$(pg_bindir || true)}
	[ -n "$PG_BINDIR" ] || { install_postgres; PG_BINDIR=$(pg_bindir); }
	export PG_BINDIR
	install_test_tools
	build_static
	go vet ./...
	# errata builds wherever Go does, not only on the Linux it ships for.
	GOOS=darwin go build ./...
	GOOS=windows go build ./...
	GOARCH=arm64 go build ./...
	# No package needs more than a few minutes on an idle 2-core machine;
	# the timeout leaves room for a busy one (go test's default is 10m).
	go test -race -count=1 -timeout 25m "$@" ./...
	;;
bench)
	shift
	[ -n "${DATABASE_URL:-}" ] || start_postgres
	install_bench_tools
	run_bench
	;;
*)
	echo "usage: ./dev.sh run | ./dev.sh test [go test flags] | ./dev.sh bench" >&2
	exit 2
	;;
esac
