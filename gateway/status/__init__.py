"""The status family: incidents, the status page, status webhooks, usage alerts, SLA credits.

Pure cores: `incidents` (when health opens or resolves an incident), `alert_rules`,
`sla` (downtime and credit table), `maintenance` (the windows), `signing`, `input`
(validation; the address check is `providers.upstream.guard`, shared with providers),
`render` (output). Orchestration: `service`
(incidents and the status page), `credits`, `notify` (events to logged deliveries),
`delivery` (one signed call with retries), `mail`. `hub` is the bounded queue towards the
delivery worker. The workers are `gateway.status.incident_monitor`, `webhook_delivery`
and `alert_evaluator`; the blueprints `gateway.status.routes`, `alerts` and `billing`.
"""
