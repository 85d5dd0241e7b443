"""People's credentials: log in for a user access token, log out, accept an invitation."""

from __future__ import annotations

from quart import Blueprint, Response, request

from gateway.organization import access, members, render
from gateway.organization import input as shapes
from gateway.organization.services import OrganizationServices
from gateway.platform.apidoc import operation
from gateway.platform.auth import bearer_token
from gateway.platform.web import json_response, read_object

TAG = "auth"


def auth_tokens_blueprint(services: OrganizationServices) -> Blueprint:
    bp = Blueprint("auth_tokens", __name__)

    @bp.post("/v1/auth/token")
    @operation(
        "A user access token for an email and password",
        TAG,
        body=shapes.Login,
        answer=render.AccessToken,
        public=True,
        errors={401: "invalid_credentials", 429: "too_many_login_attempts"},
    )
    async def log_in() -> Response:
        body = await read_object()
        return json_response(await access.log_in(services, body, request.remote_addr))

    @bp.post("/v1/auth/token/revoke")
    @operation(
        "Revoke the user access token sent as the bearer credential",
        TAG,
        body=None,
        answer=render.TokenRevoked,
        public=True,
        description="Authenticated by the token it revokes (the bearer credential).",
        errors={401: "invalid_api_key"},
    )
    async def log_out() -> Response:
        token = bearer_token(request.headers.get("authorization"))
        return json_response(await access.log_out(services, token))

    @bp.post("/v1/auth/invitations/accept")
    @operation(
        "Accept an invitation with a password; the person becomes an active member",
        TAG,
        body=shapes.InvitationAcceptance,
        answer=render.JoinedMember,
        public=True,
        errors={401: "invalid_invitation"},
    )
    async def accept_invitation() -> Response:
        body = await read_object()
        return json_response(await members.accept(services, body, request.remote_addr))

    return bp
