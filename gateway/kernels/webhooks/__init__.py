"""Webhooks several families send (status events, status alerts, agents' limit alerts):
the bounded hub between producers and the delivery worker (`hub`), signed deliveries with
retries (`delivery`, `signing`), a URL checked at registration (`registration`, over
`providers.upstream.guard`), and the delivery log (`notify`). The delivery worker is
`gateway.workers.webhook_delivery`."""
