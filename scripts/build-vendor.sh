#!/usr/bin/env bash
# Rebuild app/static/vendor/ from package.json / package-lock.json. The output is committed;
# run this only when upgrading a front-end dependency.
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --no-audit --no-fund
out=app/static/vendor/regl-scatterplot
rm -rf "$out" && mkdir -p "$out/licenses"
npx esbuild frontend/regl-scatterplot-entry.js --bundle --format=esm --minify \
  --legal-comments=none --outfile="$out/regl-scatterplot.js"
for pkg in regl-scatterplot regl pub-sub-es dom-2d-camera camera-2d-simple gl-matrix earcut regl-line @flekschas/utils; do
  license=$(ls node_modules/$pkg/LICENSE* 2>/dev/null | head -1 || true)
  if [ -n "$license" ]; then
    cp "$license" "$out/licenses/$(echo "$pkg" | tr '/' '_').txt"
  fi
done
node -e "const p=require('./node_modules/regl-scatterplot/package.json');console.log(p.name+'@'+p.version)" > "$out/VERSION"
echo "built $out"
