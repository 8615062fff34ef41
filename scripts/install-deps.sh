#!/bin/sh
# Installs the Debian 12 packages WattDB needs to build, test and run, if any are missing.
set -e
PKGS="build-essential cmake ninja-build pkg-config \
  librocksdb-dev capnproto libcapnp-dev \
  libboost-dev libboost-system-dev libboost-program-options-dev \
  libspdlog-dev libfmt-dev libgtest-dev libgmock-dev googletest libbenchmark-dev \
  libtomlplusplus-dev libpq-dev postgresql-client"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
