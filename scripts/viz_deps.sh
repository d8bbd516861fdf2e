#!/bin/sh
# VIZ viewer dependencies from the npm registry, unpacked under build/viz (never committed): @dagrejs/dagre (the graph
# layout the library embeds and serves as /dagre.min.js) and puppeteer-core (drives Debian's chromium in
# tests/viz/browser.js; it never downloads a browser). Idempotent: does nothing when both are there at these versions.
# Needs node and npm (make deps).
set -e
dir="${1:-build/viz}"
dagre=3.1.3
puppeteer=24.43.1   # the newest that runs on Node 20 (25.x needs Node >= 22.12)
has() { [ -f "$dir/node_modules/$1/package.json" ] && grep -q "\"version\": \"$2\"" "$dir/node_modules/$1/package.json"; }
has @dagrejs/dagre "$dagre" && has puppeteer-core "$puppeteer" && [ -f "$dir/node_modules/@dagrejs/dagre/dist/dagre.min.js" ] && exit 0
command -v npm >/dev/null 2>&1 || { echo "viz_deps.sh: npm is missing (make deps installs it)" >&2; exit 1; }
mkdir -p "$dir"
# --ignore-scripts: nothing here needs an install script, and puppeteer's would look for a browser to download
npm install --prefix "$dir" --ignore-scripts --no-audit --no-fund --loglevel=error "@dagrejs/dagre@$dagre" "puppeteer-core@$puppeteer"
[ -f "$dir/node_modules/@dagrejs/dagre/dist/dagre.min.js" ] || { echo "viz_deps.sh: @dagrejs/dagre@$dagre has no dist/dagre.min.js" >&2; exit 1; }
