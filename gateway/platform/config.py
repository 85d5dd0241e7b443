"""Settings: one frozen object built from defaults, a TOML file, the environment and flags.

Precedence, lowest first: the defaults below, `--config FILE` (TOML, same field names),
`GATEWAY_<FIELD>` environment variables, then command-line flags. The vendors' usual key
variables (`OPENAI_API_KEY`, ...) are read separately by the provider registry.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import attrs
import cattrs

from gateway.platform.doc_links import public_base_url


@attrs.frozen
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    data_dir: Path = attrs.field(default=Path("data"), converter=Path)
    demo: bool = False
    # A `gw_admin_...` key that exists (active, admin) whenever the server starts.
    admin_key: str | None = attrs.field(default=None, repr=False)
    # Deadlines for upstream calls, in seconds: the whole non-streamed call, the wait for
    # a stream's first chunk, and the longest silence between two chunks of a stream.
    upstream_timeout_s: float = 120.0
    first_chunk_timeout_s: float = 60.0
    stream_idle_timeout_s: float = 60.0
    connect_timeout_s: float = 10.0
    # Connection pool towards the upstreams (one pool for the whole app).
    max_upstream_connections: int = 512
    max_keepalive_connections: int = 256
    # Which HTTP client talks to the upstreams: "lean" (our HTTP/1.1 pool on raw trio
    # sockets, the fast default) or "httpx" (for HTTP/2 upstreams or proxies). With
    # "lean" both limits above apply per upstream host.
    upstream_client: Literal["lean", "httpx"] = "lean"
    # Where providers' `settings.base_url` may point (`providers.upstream.guard`), checked
    # when it is set and at every new connection: link-local and cloud metadata
    # addresses never; loopback and private ranges with "allow" (a model server on this
    # machine or network), not with "deny" (workspace admins not trusted with the internal
    # network). Comma-separated hosts or addresses exempt from both. Only the operator sets
    # these; no workspace API changes them.
    upstream_private_addresses: Literal["allow", "deny"] = "allow"
    upstream_allowed_hosts: str = ""
    # Largest request body accepted, in bytes (uploads have their own limits).
    max_body_bytes: int = 8 * 1024 * 1024
    # How long a client may take to send its request body; then 408 request_timeout.
    body_timeout_s: float = 60.0
    # The simulated upstreams' pace in --demo mode.
    sim_ttft_ms: float = 150.0
    sim_tokens_per_second: float = 80.0
    # Usage log: queue capacity (records) before new records are dropped and counted.
    usage_queue_size: int = 10_000
    # Who writes the usage log's batches (issue 23): "process", a child process of the
    # gateway with its own interpreter and SQLite connection (the batches' Python work
    # then never holds the event loop's interpreter lock); or "thread", a worker thread
    # on the gateway's own connection (no extra process; what the in-process tests use).
    usage_writer: Literal["process", "thread"] = "process"
    # Switches for what every request pays for, on by default; off is for measuring their
    # cost, or for a deployment where a proxy in front enforces limits / nobody reads usage.
    rate_limits_enabled: bool = True
    usage_log_enabled: bool = True
    # Hedging from observed latency (twice the provider's p95 time to first result) for
    # providers without a `hedge_after_ms` setting. Off by default: under overload the
    # gateway's own queueing raises every latency, and automatic hedges would add load.
    hedge_from_latency: bool = False
    # Model ids the catalog does not list that may be sent to a provider as they are:
    # comma-separated `provider/pattern` entries (providers.passthrough).
    passthrough_models: str = ""
    # Exact-match response cache: on by default; routing rules may change the TTL or
    # turn it off, and `service.cache: "skip"` bypasses it per request.
    cache_enabled: bool = True
    cache_ttl_s: float = 300.0
    cache_max_entries: int = 10_000
    cache_max_bytes: int = 64 * 1024 * 1024
    # Active health probes: every this many seconds each active provider is asked for
    # its model list (a call that costs nothing), within `health_probe_deadline_s`;
    # 0 turns the probes off. Request outcomes feed provider health either way.
    health_probe_interval_s: float = 60.0
    health_probe_deadline_s: float = 5.0
    # Incidents from provider health (gateway/status/incidents.py): checked every this
    # many seconds (0: off); a provider whose last `down_after` probes all failed opens a
    # major incident, `degraded_after` failures among the last `window` probes a minor
    # one; `recover_after` successful probes in a row resolve it.
    incident_check_interval_s: float = 30.0
    incident_down_after_probes: int = 3
    incident_degraded_after_probes: int = 2
    incident_probe_window: int = 5
    incident_recover_after_probes: int = 2
    # Status webhooks and alert notifications: per-attempt deadline, retries (exponential
    # backoff from `retry_base_s`, jitter, for at most `retry_window_s`), the bounded queue
    # of each destination and its concurrent deliveries.
    webhook_timeout_s: float = 10.0
    webhook_retry_base_s: float = 1.0
    webhook_retry_window_s: float = 3600.0
    webhook_destination_queue_size: int = 100
    webhook_destination_concurrency: int = 2
    # Comma-separated hosts that webhooks may reach although they resolve to loopback or
    # private addresses (a receiver on the operator's own network; tests). Empty: none.
    webhook_allowed_hosts: str = ""
    # Usage alerts are evaluated every this many seconds (0: off); their emails go
    # through this SMTP server (none configured: recorded as undeliverable).
    alert_eval_interval_s: float = 60.0
    smtp_host: str | None = None
    smtp_port: int = 25
    smtp_from: str = "gateway@localhost"
    smtp_timeout_s: float = 10.0
    # Agents (gateway.agents): a session without a request for this long no longer counts
    # towards `concurrent_sessions`; at most this many MCP sessions are kept in memory.
    agent_session_idle_s: float = 300.0
    mcp_max_sessions: int = 10_000
    # Files: each workspace's storage quota (507 beyond it), how long an upload's body may
    # take, and the processing worker's queue (a full queue makes uploads wait) and pool.
    files_quota_bytes: int = 10 * 1024**3
    upload_timeout_s: float = 600.0
    file_queue_size: int = 64
    file_workers: int = 2
    # How often the processing worker looks for files that want processing and are in
    # no queue (left by a stop, or by an upload cancelled while the queue was full).
    file_sweep_interval_s: float = 30.0
    # How many pages one OCR request reads at once on the local engine.
    ocr_page_concurrency: int = 2
    # Data documents: the processing queue and pool, the embedding models in order of
    # preference (each document uses the first one an active provider of its residency
    # region serves), and how often the retention worker erases expired documents.
    document_queue_size: int = 64
    document_workers: int = 2
    document_embedding_models: str = (
        "text-embedding-3-small,mistral-embed,embed-multilingual-v3.0,gemini-embedding-001"
    )
    retention_check_interval_s: float = 3600.0
    # Realtime sessions (docs/realtime.md): how far the answer's audio may run ahead of
    # playback (a barge-in then wastes at most this much synthesis, and the history
    # without a truncate is within it of what was heard), and the pipeline template a
    # realtime model id (`gpt-realtime`...) is answered by.
    realtime_audio_lead_s: float = 1.5
    realtime_template: str = "voice-agent-fast"
    # Stored responses (`POST /v1/responses` with `store`): erased by the retention worker
    # this many days after their creation (the Responses API's own is 30); 0 keeps them
    # until deleted.
    responses_retention_days: float = 30.0
    # Background responses (`POST /v1/responses` with `background: true`,
    # docs/responses-api.md): at most this many run at once in the process, and at most
    # `background_responses_per_workspace` of one workspace (429 beyond); each has
    # `background_response_timeout_s` to finish (then `failed`), and a streamed one keeps
    # its last `background_events_max_bytes` of events for `starting_after` replays.
    background_responses_max: int = 64
    background_responses_per_workspace: int = 16
    background_response_timeout_s: float = 3600.0
    background_events_max_bytes: int = 1_048_576
    # How long a graceful shutdown waits for in-flight requests, in seconds.
    shutdown_grace_s: float = 10.0
    # How long an idle client connection is kept open for its next request (longer than
    # the idle timeout of a load balancer in front, so that the balancer closes first).
    keep_alive_timeout_s: float = 75.0
    # What a client connection may hold (docs/connections.md). The request line and
    # headers must arrive within `header_timeout_s` (counted from the connection's opening,
    # then from the first byte of each later request; 408 when begun and late) and be at
    # most `max_header_bytes` long (431). A request body must come at
    # `min_upload_rate_bytes_s` on average after its first `upload_rate_grace_s` seconds
    # (408 below; 0 turns the floor off). A client that takes none of an answer's bytes for
    # `send_stall_timeout_s` is disconnected. Past `max_connections` open connections (0:
    # what the open-file limit affords, half of it beyond a reserve of 128) or
    # `max_connections_per_address` from one client address (0: no such cap), a new one
    # is answered 503 too_many_connections and closed. Long streams and WebSockets are
    # not limited by any of these.
    header_timeout_s: float = 20.0
    max_header_bytes: int = 16 * 1024
    min_upload_rate_bytes_s: float = 500.0
    upload_rate_grace_s: float = 20.0
    send_stall_timeout_s: float = 120.0
    max_connections: int = 0
    max_connections_per_address: int = 0
    # Organisation access: how long an invitation can be accepted, and how long a user
    # access token (from POST /v1/auth/token) is valid.
    invitation_ttl_s: float = 7 * 24 * 3600.0
    user_token_ttl_s: float = 3600.0
    # `GET /metrics` answers a request bearing this token (`Authorization: Bearer ...`),
    # or an admin API key; unset, only admin keys. Never logged.
    metrics_token: str | None = attrs.field(default=None, repr=False)
    # Analytics exports: how long a finished export can be downloaded (then its file is
    # deleted), and how often the export worker looks for expired ones.
    export_ttl_s: float = 24 * 3600.0
    export_sweep_interval_s: float = 60.0
    # The address clients reach the gateway at (`https://ai.example.com`), for the links
    # it gives out: each error's `doc_url`. Unset: each request's own scheme and Host.
    public_base_url: str | None = attrs.field(default=None, converter=public_base_url)
    # The request log (docs/observability.md): how many days of model calls it keeps, per
    # workspace (0: no request log). Older entries are erased every
    # `retention_check_interval_s`.
    request_log_days: float = 7.0
    # Tracing (docs/observability.md): OpenTelemetry spans of requests, upstream attempts
    # and pipeline stages, exported over OTLP/HTTP to this URL (such as
    # `http://collector:4318/v1/traces`); unset, no span is made. `otlp_headers` go with
    # each export (`name=value,name=value`: a collector's API key; never logged);
    # `trace_sample_ratio` is the share of new traces kept (a caller's `traceparent`
    # decides for its own); each export has `otlp_timeout_s`.
    otlp_endpoint: str | None = None
    otlp_headers: str | None = attrs.field(default=None, repr=False)
    trace_sample_ratio: float = 1.0
    otlp_timeout_s: float = 10.0
    # Log lines: "json" (one object per line) or "text" (for a terminal).
    log_format: Literal["json", "text"] = "json"
    # Debug only: add the start of each request body (prompts!) to the access log.
    log_request_bodies: bool = False
    # Tail latency (`gateway.operator.pauses`): log every garbage collection and event-loop
    # stall longer than `trace_threshold_ms` (for the benchmark's timeline), and the
    # young-generation collection threshold set once the gateway serves (Python's
    # default is 700 allocations), after freezing the start-up heap (`gc_freeze`).
    trace_pauses: bool = False
    trace_threshold_ms: float = 1.0
    gc_freeze: bool = True
    gc_gen0_threshold: int = 10_000
    # Scale-out (docs/scale-out.md). `workers`: processes serving one port; above 1 it
    # needs `redis_url`, a Redis-protocol server (Redis, Valkey) holding the state that
    # must be exact across processes and nodes: per-key limits and key revocations.
    # Every command to it has `redis_timeout_s`; when it is unavailable, requests are
    # refused with 503 `limits_unavailable` unless `redis_fail_open` admits them
    # unlimited. A request's concurrency slot is leased for `redis_lease_s` (renewed
    # while it runs), so a crashed worker's slots come back within that time.
    workers: int = 1
    redis_url: str | None = attrs.field(default=None, repr=False)
    redis_prefix: str = "gw:"
    redis_timeout_s: float = 2.0
    redis_fail_open: bool = False
    redis_lease_s: float = 30.0
    redis_max_connections: int = 32
    # The shared store of several nodes (docs/postgresql.md): a PostgreSQL URL
    # (`postgresql://user:password@host:port/database`); unset, the SQLite file in
    # `data_dir`. Never shown: it may hold a password.
    database_url: str | None = attrs.field(default=None, repr=False)
    # Where uploaded files, data documents and analytics exports live: `data_dir` by
    # default; with several nodes on one PostgreSQL store, a directory every node mounts.
    blob_dir: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))

    @property
    def database_path(self) -> Path:
        return self.data_dir / "gateway.db"

    @property
    def blob_root(self) -> Path:
        return self.data_dir if self.blob_dir is None else self.blob_dir

    @property
    def blobs_shared(self) -> bool:
        """Other nodes may write the blob directory at any moment (a shared store)."""
        return self.database_url is not None


_converter = cattrs.Converter()
_converter.register_structure_hook(Path, lambda value, _: Path(value))


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for field in attrs.fields(Settings):
        raw = env.get("GATEWAY_" + field.name.upper())
        if raw is None:
            continue
        values[field.name] = _coerce(raw, field.type)
    return values


def _coerce(raw: str, kind: Any) -> Any:
    if kind in (bool, "bool"):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if kind in (int, "int"):
        return int(raw)
    if kind in (float, "float"):
        return float(raw)
    return raw


def load_settings(
    *,
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge the layers and validate the result into a `Settings`."""
    env = os.environ if env is None else env
    merged: dict[str, Any] = {}
    if config_file is not None:
        with config_file.open("rb") as handle:
            merged.update(tomllib.load(handle))
    merged.update(_from_env(env))
    merged.update({k: v for k, v in (overrides or {}).items() if v is not None})
    unknown = set(merged) - {f.name for f in attrs.fields(Settings)}
    if unknown:
        raise ValueError(f"unknown settings: {', '.join(sorted(unknown))}")
    return _converter.structure(merged, Settings)
