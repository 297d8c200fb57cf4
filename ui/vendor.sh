#!/usr/bin/env bash
# Copies the console's pinned browser assets from the npm registry into
# ui/static and records their versions and sha256 in ui/static/VENDOR.
# The copies are committed: a build needs no npm, and nothing is fetched at
# run time. Run it only to change a version (edit ui/package.json first).
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp package.json "$tmp/"
(cd "$tmp" && npm install --no-audit --no-fund --ignore-scripts >/dev/null)
version=$(node -p "require('$tmp/node_modules/htmx.org/package.json').version")
cp "$tmp/node_modules/htmx.org/dist/htmx.min.js" static/htmx.min.js
{
  echo "# name version file sha256 — written by ui/vendor.sh"
  echo "htmx.org $version htmx.min.js $(sha256sum static/htmx.min.js | cut -d' ' -f1)"
} > static/VENDOR
cat static/VENDOR
