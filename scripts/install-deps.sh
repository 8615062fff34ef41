#!/bin/sh
# Installs the Debian 12 packages WattDB needs to build, test and run, if any are missing.
set -e
PKGS="build-essential cmake ninja-build pkg-config \
  librocksdb-dev capnproto libcapnp-dev \
  libboost-dev libboost-system-dev libboost-program-options-dev \
  libspdlog-dev libfmt-dev libgtest-dev libgmock-dev googletest libbenchmark-dev \
  libtomlplusplus-dev libre2-dev libpq-dev libssl-dev postgresql-client postgresql-15 python3-psycopg2 sysbench \
  libgoogle-perftools-dev clang clang-format clang-tidy libclang-rt-14-dev ipmitool openipmi libopenipmi-dev iproute2 python3-matplotlib"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

# The sqllogictest-rs runner (both its postgres engines run the SQL tests), from crates.io.
SLT_VERSION=0.29.1
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
if ! "$CARGO_BIN/sqllogictest" --version 2>/dev/null | grep -q "$SLT_VERSION"; then
  if command -v cargo >/dev/null 2>&1 || [ -x "$CARGO_BIN/cargo" ]; then
    echo "installing sqllogictest-bin $SLT_VERSION (cargo)"
    PATH="$CARGO_BIN:$PATH" cargo install -q sqllogictest-bin --version "$SLT_VERSION" --locked
  else
    echo "warning: cargo not found; the sqllogictest-rs tests will fail (install Rust, then rerun)" >&2
  fi
fi
