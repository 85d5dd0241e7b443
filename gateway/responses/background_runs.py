"""The background responses running in this process: their tasks, states and limits.

A background response (`background: true`) is answered at once, `queued`, and runs in a
task of the app-level nursery this worker owns (`run`), not the request's: its client
may leave, poll, stream it again or cancel it. Each run has a cancel scope with the
response's deadline (`background_response_timeout_s`), so `cancel` stops its upstream
call at once. The state follows `TRANSITIONS`; every state reached is kept in the store
(`store.responses.ResponseKeeper`, written behind), by the run's own task only, so the
writes of one response never pass each other. At most `limit` run at once, and
`per_workspace` of one workspace: beyond, a 429 `concurrent_limit_exceeded`.

A finished run stays in memory a while (`FINISHED_KEEP_S`, at most `limit` of them) for
its events (`replay.EventLog`) and an idempotent cancel; the store has its final state.
A process that stops leaves its runs `in_progress` in the store: the next start of the
gateway marks them `failed` (`sweep`), before it serves.
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import trio

from gateway.platform.context import RequestContext, current_request, open_request
from gateway.platform.errors import ApiError
from gateway.responses.replay import EventLog
from store.db import Database
from store.responses import ResponseKeeper, StoredResponse, fail_unfinished

logger = logging.getLogger(__name__)

# A state's possible next states; the finished ones have none.
TRANSITIONS: Mapping[str, frozenset[str]] = {
    "queued": frozenset({"in_progress", "cancelled", "failed"}),
    "in_progress": frozenset({"completed", "incomplete", "failed", "cancelled"}),
}
FINISHED_KEEP_S = 600.0  # a finished run's events can be read again this long
FINAL_WRITE_DEADLINE_S = 5.0
RESTARTED = {
    "code": "gateway_restarted",
    "message": "The gateway stopped before this background response finished; create it again.",
}
TIMED_OUT = "response_timeout"
Key = tuple[str, str]  # (workspace id, response id)


def moves(status: str, to: str) -> bool:
    """Whether a response may go from `status` to `to`."""
    return to in TRANSITIONS.get(status, ())


def refusal(running: int, in_workspace: int, limit: int, per_workspace: int) -> ApiError | None:
    """The 429 for one more run when `running` run in all and `in_workspace` in its
    workspace; None when it may start."""
    if running < limit and in_workspace < per_workspace:
        return None
    whole = running >= limit
    cap, current = (limit, running) if whole else (per_workspace, in_workspace)
    where = "on this gateway" if whole else "in this workspace"
    return ApiError(
        429,
        "concurrent_limit_exceeded",
        f"At most {cap} background responses may run at once {where}; wait for one to "
        "finish, or cancel one.",
        type="rate_limit_error",
        headers={"Retry-After": "1"},
        limit=cap,
        current=current,
        retry_after=1,
        limit_type="background_responses",
    )


@attrs.define(eq=False)
class Run:
    """One background response: its stored form (whose `response` is its current state),
    the scope its task runs in, and its events when streamed."""

    record: StoredResponse
    scope: trio.CancelScope
    log: EventLog | None
    done: trio.Event = attrs.field(factory=trio.Event)
    persisted: StoredResponse | None = None  # the last state handed to the store
    erased: bool = False  # its workspace was deleted: nothing more is stored
    finished_at: float = 0.0

    @property
    def key(self) -> Key:
        return self.record.workspace_id, self.record.id

    @property
    def response(self) -> Mapping[str, Any]:
        return self.record.response

    @property
    def status(self) -> str:
        return str(self.record.response["status"])

    @property
    def finished(self) -> bool:
        return self.status not in TRANSITIONS

    def move(self, response: Mapping[str, Any]) -> bool:
        """Take `response` as the current state if its status may follow the current
        one (a cancelled response stays cancelled whatever its task still says)."""
        if not moves(self.status, response["status"]):
            return False
        created = self.record.response["created_at"]
        self.record = attrs.evolve(self.record, response={**response, "created_at": created})
        return True

    def moved_to(self, status: str, **fields: Any) -> bool:
        return self.move({**self.record.response, "status": status, **fields})

    def fail(self, code: str, message: str) -> bool:
        return self.moved_to("failed", error={"code": code, "message": message})


Turn = Callable[[Run], Awaitable[None]]


class BackgroundResponses:
    """The runs of this process; see the module docstring."""

    def __init__(
        self,
        keeper: ResponseKeeper,
        db: Database,
        *,
        limit: int,
        per_workspace: int,
        timeout_s: float,
        events_max_bytes: int,
    ) -> None:
        self._keeper, self._db = keeper, db
        self.limit, self.per_workspace = limit, per_workspace
        self._timeout_s, self._events_max_bytes = timeout_s, events_max_bytes
        self._nursery: trio.Nursery | None = None
        self._running: dict[Key, Run] = {}
        self._finished: OrderedDict[Key, Run] = OrderedDict()
        self._by_workspace: Counter[str] = Counter()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own the runs until cancelled (which cancels them: the next start marks them
        failed, `sweep`)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None

    async def sweep(self) -> int:
        """Mark `failed` the background responses a stopped process left unfinished; how
        many. Once per start of the whole gateway, before it serves
        (`gateway.app.server.prepare_store`: the supervisor of `--workers N`, else the one
        process): a worker restarted alone must not fail the others' runs."""
        marked = await self._db.run(lambda db: fail_unfinished(db, RESTARTED))
        if marked:
            logger.warning("background responses: %d left unfinished marked failed", marked)
        return marked

    # -- starting --------------------------------------------------------------------------

    async def start(
        self, record: StoredResponse, turn: Turn, *, opening: list[dict[str, Any]] | None
    ) -> Run:
        """Store `record` (`queued`) and start its run; a 429 past the limits, a 503
        when the gateway is stopping. With `opening` (a streamed response's first events)
        the run keeps its events. Cancelled while storing: no run is left."""
        self._owner()
        self._admit(record.workspace_id)
        deadline = trio.current_time() + self._timeout_s
        log = None
        if opening is not None:
            log = EventLog(self._events_max_bytes)
            for event in opening:
                log.add(event)
        run = Run(record, trio.CancelScope(deadline=deadline), log)
        self._running[run.key] = run
        self._by_workspace[record.workspace_id] += 1
        try:
            await self._persist(run)
            nursery = self._owner()  # the gateway may have begun to stop meanwhile
        except BaseException:
            self._release(run)
            raise
        nursery.start_soon(self._drive, run, turn, current_request())
        return run

    def _owner(self) -> trio.Nursery:
        if self._nursery is None:
            raise ApiError(
                503, "service_unavailable", "The gateway is stopping.", type="server_error"
            )
        return self._nursery

    def _admit(self, workspace_id: str) -> None:
        refused = refusal(
            len(self._running), self._by_workspace[workspace_id], self.limit, self.per_workspace
        )
        if refused is not None:
            raise refused

    # -- running ---------------------------------------------------------------------------

    async def _drive(self, run: Run, turn: Turn, origin: RequestContext | None) -> None:
        """The run's task: `in_progress`, the turn, then its final state, kept whatever
        ended it (a failure is the response's `error`, never the nursery's)."""
        if origin is not None:  # the request's id, not its finished span or access log
            open_request(RequestContext(request_id=origin.request_id, trace=origin.trace))
        try:
            with run.scope:
                if run.moved_to("in_progress"):
                    await self._persist(run)
                await turn(run)
            if run.scope.cancelled_caught:
                run.fail(TIMED_OUT, f"The response did not finish within {self._timeout_s:g} s.")
        except ApiError as error:
            run.fail(error.code, error.message)
        except Exception:
            logger.exception("background response %s failed", run.record.id)
            run.fail("server_error", "The gateway failed to run this response.")
        finally:
            await self._finish(run)

    async def settle(self, run: Run, response: Mapping[str, Any]) -> None:
        """The turn's finished response (the dialect's `on_final`), kept before its last
        event is added."""
        if run.move(response):
            await self._persist(run)

    async def _finish(self, run: Run) -> None:
        stopping = not run.finished  # cancelled from outside: the gateway is stopping
        if stopping:
            run.fail(RESTARTED["code"], RESTARTED["message"])
        if run.log is not None:
            if run.status == "failed" and not run.log.ended:
                run.log.add({"type": "response.failed", "response": dict(run.response)})
            run.log.close()
        try:
            # Stopping, the store keeps the state last kept (the keeper's last write may
            # be under way: a record kept now could replace the one it writes, and be
            # lost with it); the next start fails it (`sweep`).
            if not stopping:
                with trio.move_on_after(FINAL_WRITE_DEADLINE_S, shield=True):
                    await self._persist(run)
        finally:
            self._release(run)
            self._keep_finished(run)
            run.done.set()

    async def _persist(self, run: Run) -> None:
        record = run.record
        if run.erased or run.persisted is record:
            return
        await self._keeper.keep(record)
        run.persisted = record

    def _release(self, run: Run) -> None:
        if self._running.pop(run.key, None) is run:
            self._by_workspace[run.record.workspace_id] -= 1
            if not self._by_workspace[run.record.workspace_id]:
                del self._by_workspace[run.record.workspace_id]

    def _keep_finished(self, run: Run) -> None:
        if run.erased:
            return
        run.finished_at = trio.current_time()
        self._finished[run.key] = run
        self._evict()

    def _evict(self) -> None:
        oldest = trio.current_time() - FINISHED_KEEP_S
        while self._finished:
            first = next(iter(self._finished.values()))
            if len(self._finished) <= self.limit and first.finished_at > oldest:
                return
            self._finished.popitem(last=False)

    # -- reading, cancelling, forgetting ----------------------------------------------------

    def get(self, workspace_id: str, response_id: str) -> Run | None:
        """The run of that id in that workspace, running or recently finished."""
        key = (workspace_id, response_id)
        self._evict()
        return self._running.get(key) or self._finished.get(key)

    async def cancel(self, run: Run) -> bool:
        """Cancel `run` if it has not finished (its upstream call is cancelled at once),
        and return once its final state is kept; whether it is cancelled (False: it had
        finished otherwise). A caller cancelled while waiting leaves it cancelled."""
        if run.moved_to("cancelled"):
            run.scope.cancel()
        await run.done.wait()
        return run.status == "cancelled"

    def forget_workspace(self, workspace_id: str) -> None:
        """A deleted workspace: its runs are cancelled and store nothing more."""
        for run in [*self._running.values(), *self._finished.values()]:
            if run.record.workspace_id == workspace_id:
                run.erased = True
                run.moved_to("cancelled")
                run.scope.cancel()
                self._finished.pop(run.key, None)

    def forget(self, run: Run) -> None:
        """A deleted response: its events go (it was cancelled and waited for first)."""
        self._finished.pop(run.key, None)
