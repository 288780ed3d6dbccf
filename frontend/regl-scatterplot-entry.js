// Bundled by scripts/build-vendor.sh into one ES module with its dependencies (regl, pub-sub-es, ...).
export { default } from 'regl-scatterplot';
