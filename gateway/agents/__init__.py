"""Agents: automated callers with their own key, limits, sessions, suspension and alerts.

`limits` says what an agent may spend (templates, inheritance from the organisation),
`counters` counts what it spends (reserve, settle, current), `gate` admits each of its
requests before the upstream call, `hold` settles what the request really used,
`suspension` stops and restarts it, `alerts` tells its owner when a threshold is crossed,
`usage` shows the figures to the management API and to the agent itself (`mcp`).
"""
