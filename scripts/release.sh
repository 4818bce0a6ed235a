#!/usr/bin/env bash
# Builds a release of mcp-tasks-proxy into dist/, with no network once the Go
# modules (the product's and GoReleaser's) are in the module cache:
#   - archives for linux, darwin and windows on amd64 and arm64 (.tar.gz,
#     .zip for windows), with LICENSE and README.md, and a checksums file;
#   - .deb and .rpm packages (linux);
#   - the Homebrew cask, dist/homebrew/Casks/mcp-tasks-proxy.rb;
#   - the npm packages in dist/npm/: mcp-tasks-proxy and one
#     @mcp-tasks-proxy/<os>-<arch> per platform (scripts/npm/pack.js).
# Nothing is published.
#
# Usage: scripts/release.sh [--snapshot]
#   On a commit tagged vX.Y.Z with a clean tree it builds that version;
#   anywhere else, or with --snapshot, a snapshot X.Y.Z-snapshot-COMMIT.
# Needs Go, git, node and npm. GoReleaser is installed into $(go env GOPATH)/bin
# at the pinned version when it is not there yet (or set GORELEASER=path).
set -euo pipefail

GORELEASER_VERSION=v2.15.1
GORELEASER_MODULE=github.com/goreleaser/goreleaser/v2

cd "$(dirname "$0")/.."

snapshot=auto
for arg in "$@"; do
  case "$arg" in
    --snapshot) snapshot=yes ;;
    -h | --help)
      sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "release.sh: unknown argument $arg (try --help)" >&2
      exit 2
      ;;
  esac
done

for tool in go git node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "release.sh: $tool is needed and not on PATH" >&2
    exit 1
  fi
done

# GoReleaser at the pinned version, as a tool outside this module: it never
# becomes a dependency of the product. The module cache answers first, so a
# second install needs no network.
goreleaser_ok() {
  [ -x "$1" ] && go version -m "$1" 2>/dev/null |
    awk -v m="$GORELEASER_MODULE" -v v="$GORELEASER_VERSION" '$1 == "mod" && $2 == m && $3 == v { ok = 1 } END { exit !ok }'
}
goreleaser=${GORELEASER:-"$(go env GOPATH)/bin/goreleaser"}
if ! goreleaser_ok "$goreleaser"; then
  if [ -n "${GORELEASER:-}" ]; then
    echo "release.sh: GORELEASER=$GORELEASER is not GoReleaser $GORELEASER_VERSION" >&2
    exit 1
  fi
  echo "== installing GoReleaser $GORELEASER_VERSION into $(dirname "$goreleaser")"
  modcache=$(go env GOMODCACHE)
  GOBIN=$(dirname "$goreleaser") GOFLAGS='' \
    GOPROXY="file://$modcache/cache/download,$(go env GOPROXY)" \
    go install "$GORELEASER_MODULE@$GORELEASER_VERSION"
fi

# The version: the tag on HEAD for a release, else a snapshot.
if [ "$snapshot" = auto ]; then
  snapshot=yes
  if tag=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null) &&
    [ -z "$(git status --porcelain)" ]; then
    echo "== release $tag"
    snapshot=no
  fi
fi
args=(release --clean '--skip=publish,announce')
if [ "$snapshot" = yes ]; then
  echo "== snapshot"
  args+=(--snapshot)
fi

# GoReleaser reads the commit only where git names a remote; a checkout
# without one gets the project's, in this process's git configuration only.
if [ -z "$(git remote)" ]; then
  export GIT_CONFIG_COUNT=1
  export GIT_CONFIG_KEY_0=remote.origin.url
  export GIT_CONFIG_VALUE_0=https://github.com/mcp-tasks-proxy/mcp-tasks-proxy.git
fi

"$goreleaser" check
"$goreleaser" "${args[@]}"

version=$(node -p 'require("./dist/metadata.json").version')
echo "== npm packages $version"
rm -rf dist/npm
node scripts/npm/pack.js --all --version "$version" --out dist/npm --artifacts dist/artifacts.json

echo "== checking dist/"
cd dist
expect() { # expect COUNT GLOB...: exactly COUNT files match
  local want=$1 got
  shift
  got=$(find . -maxdepth 3 -type f \( "$@" \) | wc -l | tr -d ' ')
  if [ "$got" != "$want" ]; then
    echo "release.sh: expected $want files matching $*, found $got" >&2
    exit 1
  fi
}
expect 4 -name '*.tar.gz' -path './mcp-tasks-proxy_*'
expect 2 -name '*.zip'
expect 2 -name '*.deb'
expect 2 -name '*.rpm'
expect 1 -name '*_checksums.txt'
expect 1 -path './homebrew/Casks/mcp-tasks-proxy.rb'
expect 7 -path './npm/*.tgz'
expect 5 -path './npm/platforms/*.tgz'
if command -v sha256sum >/dev/null 2>&1; then
  sha256sum --quiet -c ./*_checksums.txt
else
  shasum -a 256 --quiet -c ./*_checksums.txt
fi
ls -1 ./*.tar.gz ./*.zip ./*.deb ./*.rpm ./*_checksums.txt homebrew/Casks/*.rb npm/*.tgz npm/platforms/*.tgz
