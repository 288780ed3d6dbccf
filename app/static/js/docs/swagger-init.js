// Starts the vendored Swagger UI on /docs. No validator badge: it would call
// validator.swagger.io, and the docs must work with no network beyond this server.
(function () {
  "use strict";
  var root = document.getElementById("api-docs");
  window.ui = window.SwaggerUIBundle({
    url: root.dataset.specUrl,
    domNode: root,
    presets: [window.SwaggerUIBundle.presets.apis, window.SwaggerUIBundle.SwaggerUIStandalonePreset],
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    validatorUrl: null,
  });
})();
