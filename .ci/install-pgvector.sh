#!/usr/bin/env bash
# Builds and installs pgvector for the local PostgreSQL server when the extension is missing.
# Debian 12 ships no pgvector package for PostgreSQL 15, so we build Debian's own source package
# (suite trixie) against postgresql-server-dev-<major>. Idempotent; takes ~10-60 s when needed.
set -euo pipefail

PG_MAJOR=$(psql -h 127.0.0.1 -U postgres -d postgres -Atc "show server_version_num" | cut -c1-2)
if [ -f "/usr/share/postgresql/${PG_MAJOR}/extension/vector.control" ]; then
  echo "pgvector already installed for PostgreSQL ${PG_MAJOR}"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
SRC_LIST=/etc/apt/sources.list.d/pgvector-src.sources
if [ ! -f "$SRC_LIST" ]; then
  cat > "$SRC_LIST" <<SOURCES
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
fi
apt-get update -qq
apt-get install -y -qq "postgresql-server-dev-${PG_MAJOR}" make gcc dpkg-dev >/dev/null

WORK=$(mktemp -d)
cd "$WORK"
apt-get source --download-only pgvector >/dev/null
tar xzf pgvector_*.orig.tar.gz
cd "$(find . -maxdepth 1 -type d -name 'pgvector*' | head -n 1)"
make OPTFLAGS="" PG_CONFIG="/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config" >/dev/null
make install PG_CONFIG="/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config" >/dev/null
rm -rf "$WORK"
echo "pgvector built and installed for PostgreSQL ${PG_MAJOR}"
