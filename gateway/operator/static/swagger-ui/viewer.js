// Starts Swagger UI on this gateway's own document (kept out of the HTML page so that a
// Content-Security-Policy without 'unsafe-inline' can serve it).
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  persistAuthorization: false,
});
