"""What operators look at: the OpenAPI document, Prometheus metrics, structured logs and the
web console. Nothing here is on a request's critical path beyond a few counter increments."""
