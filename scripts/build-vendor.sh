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

# /docs and /redoc: the prebuilt bundles as published, served from here instead of a CDN.
docs=app/static/vendor/swagger-ui
rm -rf "$docs" && mkdir -p "$docs"
cp node_modules/swagger-ui-dist/{swagger-ui-bundle.js,swagger-ui.css,LICENSE,NOTICE} "$docs/"
node -e "const p=require('./node_modules/swagger-ui-dist/package.json');console.log(p.name+'@'+p.version)" > "$docs/VERSION"
redoc=app/static/vendor/redoc
rm -rf "$redoc" && mkdir -p "$redoc"
cp node_modules/redoc/bundles/{redoc.standalone.js,redoc.standalone.js.LICENSE.txt} node_modules/redoc/LICENSE "$redoc/"
node -e "const p=require('./node_modules/redoc/package.json');console.log(p.name+'@'+p.version)" > "$redoc/VERSION"
# The bundles name source maps that are not shipped; drop the reference.
sed -i '/^\/\/# sourceMappingURL=/d' "$docs/swagger-ui-bundle.js" "$redoc/redoc.standalone.js"
sed -i 's#/\*\# sourceMappingURL=.*\*/##' "$docs/swagger-ui.css"
# ReDoc's sidebar shows a logo from cdn.redoc.ly: point it at an empty data: image, which fails
# to decode, so ReDoc hides it (its onError) and nothing leaves the server.
sed -i 's#https://cdn.redoc.ly/redoc/logo-mini.svg#data:,#' "$redoc/redoc.standalone.js"
if grep -Eo 'https://(cdn|fonts)\.[a-z.]+' "$docs/swagger-ui-bundle.js" "$redoc/redoc.standalone.js"; then
  echo "a vendored docs bundle still loads from a CDN" >&2
  exit 1
fi
echo "built $docs and $redoc"
