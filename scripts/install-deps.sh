#!/usr/bin/env bash
# Installs what loopr needs from Debian 12's packages only. Idempotent: a
# second run installs nothing new. Needs root (or sudo); prints what it
# installs.
#   scripts/install-deps.sh        everything: build, run, test, benchmark,
#                                  package (scripts/test.sh, CI)
#   scripts/install-deps.sh --run  only what building and running loopr need
#                                  (scripts/demo.sh: a first run in minutes)
set -euo pipefail

for_run=false
case "${1:-}" in
  --run) for_run=true ;;
  "") ;;
  *) echo "install-deps: unknown option $1 (--run: only what building and running need)" >&2; exit 2 ;;
esac

packages=(
  # toolchain
  g++ cmake ninja-build pkg-config git
  # libraries named in DESIGN.md
  libasio-dev nlohmann-json3-dev libtoml11-dev libspdlog-dev libfmt-dev
  libseccomp-dev libcap-dev libcli11-dev libsqlite3-dev libcurl4-openssl-dev
  libncurses-dev
  # looprctl mcp --http: the MCP server's Streamable HTTP transport
  libcpp-httplib-dev
  # web_fetch: HTML to Markdown/text (libxml2's tolerant HTML parser; also
  # decodes the page's charset)
  libxml2-dev
  # SHA-256 content hashes for read-before-edit (already pulled in by libcurl)
  libssl-dev
  # grep's regex engine (PCRE2 with JIT; chosen by measurement, bench/README.md)
  libpcre2-dev
  # [notify] desktop = true: freedesktop notifications on the D-Bus session bus
  libdbus-1-dev
  # [cluster]: workers on other machines through NATS JetStream (libnats, the
  # C client; nats-server, the server a person runs and the tests start)
  libnats-dev nats-server
  # the demo's commands inside jobs (curl through the egress proxy) and its
  # stand-in for an allowed internet server (python3 http.server)
  curl python3
)
if ! $for_run; then
  packages+=(
    # fuzzing (clang's libFuzzer) and the format check
    clang-14 libclang-rt-14-dev clang-format
    # RE2, only for bench/regex_engine_bench (the measurement that chose PCRE2)
    libre2-dev
    # tests and benchmarks
    libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
    ripgrep bubblewrap hyperfine util-linux
    # the cluster tests: a worker in a network namespace of its own brings up lo
    iproute2
    # the TUI's end-to-end tests run loopr-tui in a real terminal
    tmux
    # desktop notifications are tested on a private session bus
    dbus-daemon
    # commands the attack tests run inside jobs (netcat-openbsd for git over
    # ssh through the egress proxy)
    netcat-openbsd
    # the official JSON-Schema-Test-Suite, for the ToolRouter's schema validator
    json-schema-test-suite
    # the Debian package (scripts/check-package.sh): cpack's dpkg-shlibdeps,
    # lintian, and systemd-analyze to verify the units offline
    dpkg-dev lintian systemd
  )
  # npm, for scripts/install-test-npm.sh (the MCP SDK, the conformance suite
  # and the Node 22 they run on); a node already on PATH with its npm is kept.
  command -v npm >/dev/null || packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
