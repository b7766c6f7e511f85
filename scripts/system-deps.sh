#!/usr/bin/env bash
# Install Debian packages the project needs, only when missing; explain instead of failing
# obscurely on machines where apt is not available or we are not root.
set -euo pipefail
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "note: not a Debian-like system; install these yourself: ${missing[*]}" >&2
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "note: not root; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 0
fi
echo "Installing Debian packages: ${missing[*]}" >&2
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
