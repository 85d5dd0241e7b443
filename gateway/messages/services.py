"""What the Messages family uses, built once by the composition root (`gateway.app`):
chat's path with a dialect in front (chat's own `serve_chat`, handed in by the root: the
family never imports chat), and the catalog `count_tokens` checks its model against."""

from __future__ import annotations

import attrs

from gateway.kernels.dialects import ServeChat
from providers.catalog import Catalog


@attrs.frozen
class MessagesServices:
    serve_chat: ServeChat
    catalog: Catalog
