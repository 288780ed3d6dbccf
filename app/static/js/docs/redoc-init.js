// Starts the vendored ReDoc on /redoc with the system font stack (no web fonts from a CDN).
(function () {
  "use strict";
  var root = document.getElementById("api-docs");
  var fonts = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
  window.Redoc.init(
    root.dataset.specUrl,
    { theme: { typography: { fontFamily: fonts, headings: { fontFamily: fonts } } } },
    root
  );
})();
