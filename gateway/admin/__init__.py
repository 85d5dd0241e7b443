"""The core's own management API: API keys, providers, rate limits, the model list and
health (`/health`, `/v1/health/detailed`)."""
