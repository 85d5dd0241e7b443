"""Mounting by what is installed: a family whose extras are missing is not mounted.

A family of the registry that `requires` extras (`gateway.platform.extras.Requires`) is
mounted only when they are installed. Otherwise none of its code runs and none of its
packages loads; its stand-in answers its paths instead (every method under each path
prefix, and a WebSocket handshake there: 501 `feature_not_installed`, the spec's envelope
with the command that installs the extra), the catalog leaves out the models only it
serves (so `/v1/models` does not offer them), and the start-up banner says what is off.

The stand-in authenticates the caller first, as the family's own routes would: a request
without a valid credential gets the usual 401 and learns nothing about the installation.
"""

from __future__ import annotations

from collections.abc import Sequence

from quart import Blueprint, Response, request, websocket

from gateway.app.families import FAMILIES, Family, Mounted
from gateway.app.state import AppState
from gateway.platform.callers import Authenticator
from gateway.platform.errors import ApiError
from gateway.platform.extras import Requires, install_command, not_installed
from gateway.platform.web import error_response
from providers.catalog import Catalog

# HEAD and OPTIONS come with every rule (Quart adds them).
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def mount_all(state: AppState, families: Sequence[Family] = FAMILIES) -> list[Mounted]:
    """Each family mounted, or, when one of its extras is missing, its stand-in."""
    return [_mounted_or_absent(state, family) for family in families]


def available(families: Sequence[Family] = FAMILIES) -> list[Family]:
    """The families whose extras are all installed: those mounted."""
    return [f for f in families if f.requires is None or not f.requires.missing()]


def _mounted_or_absent(state: AppState, family: Family) -> Mounted:
    if family.requires is None or not family.requires.missing():
        return family.mount(state)
    return Mounted((absent_blueprint(family.name, family.requires, state.auth),))


def absent_blueprint(name: str, requires: Requires, auth: Authenticator) -> Blueprint:
    """The routes of family `name` while `requires.extras` are not all installed."""
    blueprint = Blueprint(f"absent_{name}", __name__)
    extras = requires.missing()

    async def answer(rest: str = "") -> Response:
        await auth.any(request)
        raise not_installed(requires.feature, extras)

    async def refuse_handshake(rest: str = "") -> Response:
        """The handshake refused with an HTTP answer, before any accept."""
        try:
            await auth.header(websocket.headers.get("authorization"), websocket.remote_addr)
            raise not_installed(requires.feature, extras)
        except ApiError as error:
            return error_response(error)

    for index, path in enumerate(requires.paths):
        below = f"{path.rstrip('/')}/<path:rest>"
        for rule, endpoint in ((path, f"path{index}"), (below, f"path{index}_below")):
            blueprint.add_url_rule(rule, endpoint, answer, methods=list(METHODS))
            blueprint.add_websocket(rule, f"{endpoint}_ws", refuse_handshake)
    return blueprint


def offered(catalog: Catalog, families: Sequence[Family] = FAMILIES) -> Catalog:
    """`catalog` without the models that only families not mounted serve."""
    absent = {
        model_type
        for family in families
        if family.requires is not None and family.requires.missing()
        for model_type in family.requires.model_types
    }
    return catalog.without_types(absent)


def installed_report(families: Sequence[Family] = FAMILIES) -> list[str]:
    """The start-up banner's lines: the families on, and those off with what adds them."""
    on = [f.name for f in available(families)]
    off: dict[str, list[str]] = {}
    for family in families:
        absent = () if family.requires is None else family.requires.missing()
        if absent:
            off.setdefault(install_command(absent), []).append(family.name)
    lines = [f"families: {', '.join(on)}"]
    lines += [f"not installed: {', '.join(names)} ({command})" for command, names in off.items()]
    return lines
