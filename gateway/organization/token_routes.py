"""People's credentials: log in for a user access token, log out, accept an invitation."""

from __future__ import annotations

from quart import Blueprint, Response, request

from gateway.organization import access, members
from gateway.organization.services import OrganizationServices
from gateway.platform.auth import bearer_token
from gateway.platform.web import json_response, read_object


def auth_tokens_blueprint(services: OrganizationServices) -> Blueprint:
    bp = Blueprint("auth_tokens", __name__)

    @bp.post("/v1/auth/token")
    async def log_in() -> Response:
        body = await read_object()
        return json_response(await access.log_in(services, body, request.remote_addr))

    @bp.post("/v1/auth/token/revoke")
    async def log_out() -> Response:
        token = bearer_token(request.headers.get("authorization"))
        return json_response(await access.log_out(services, token))

    @bp.post("/v1/auth/invitations/accept")
    async def accept_invitation() -> Response:
        body = await read_object()
        return json_response(await members.accept(services, body, request.remote_addr))

    return bp
