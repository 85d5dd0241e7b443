"""The registry's claims about the extras hold: a family's path prefixes cover exactly its
routes, the catalog without a family's model types is still a sound catalog, and a
PostgreSQL store without its driver is refused at start with the command to run."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest
import trio

from gateway.app.extras import mount_all
from gateway.app.factory import create_app
from gateway.app.families import FAMILIES, Family, Mounted
from gateway.app.scaleout import check_workers
from gateway.app.state import AppState
from gateway.platform.config import Settings
from providers.catalog import MODEL_TYPES, load_catalog
from store.db import open_database
from tests.install.conftest import Block, start


def _paths(settings: Settings, mounted: Mounted) -> set[str]:
    """Every path the family serves: its fast-path routes and its Quart rules."""
    app = create_app(settings, [mounted])
    rules = {rule.rule for rule in app.url_map.iter_rules() if rule.endpoint != "static"}
    return rules | {route.path for route in mounted.routes}


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


async def test_each_familys_paths_cover_its_routes_and_no_other_familys(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    state: AppState = (await start(nursery, tmp_path)).state
    served = {family.name: _paths(state.settings, family.mount(state)) for family in FAMILIES}
    optional: list[Family] = [f for f in FAMILIES if f.requires is not None]
    assert {f.name for f in optional} >= {"audio", "pipelines", "realtime", "files", "ocr"}
    for family in optional:
        assert family.requires is not None
        prefixes = family.requires.paths
        assert served[family.name] and all(_under(p, prefixes) for p in served[family.name])
        others = {p for name, paths in served.items() if name != family.name for p in paths}
        assert not [p for p in others if _under(p, prefixes)], family.name


async def test_every_family_mounted_when_installed(nursery: trio.Nursery, tmp_path: Path) -> None:
    state: AppState = (await start(nursery, tmp_path)).state
    blueprints = {bp.name for mounted in mount_all(state) for bp in mounted.blueprints}
    assert not [name for name in blueprints if name.startswith("absent_")]


@pytest.mark.parametrize(
    "types",
    [
        frozenset(chosen)
        for size in (1, 2, 3)
        for chosen in itertools.combinations(sorted(MODEL_TYPES - {"chat"}), size)
    ],
)
def test_the_catalog_without_model_types_is_a_sound_catalog(types: frozenset[str]) -> None:
    full = load_catalog()
    kept = full.without_types(types)
    assert kept.models() and not [m for m in kept.models() if m.type in types]
    assert [m.id for m in kept.models()] == [m.id for m in full.models() if m.type not in types]
    for model in kept.models():
        assert all(kept.model(target) is not None for target in model.fallback_chain)
    assert full.without_types(frozenset()) is full


def test_a_postgresql_store_without_its_driver_is_refused_with_the_command(
    tmp_path: Path, block: Block, monkeypatch: pytest.MonkeyPatch
) -> None:
    block("psycopg")
    for loaded in ("store.postgres", "store.postgres_db"):  # imported again, without psycopg
        monkeypatch.delitem(sys.modules, loaded, raising=False)
    settings = Settings(data_dir=tmp_path, database_url="postgresql://localhost/gateway")
    refused = check_workers(settings, {"GATEWAY_SECRET_KEY": "k" * 44})
    assert refused == (
        "GATEWAY_DATABASE_URL needs the [postgres] extra: pip install 'ai-gateway[postgres]'"
    )
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'ai-gateway\[postgres\]'"):
        open_database(None, "postgresql://localhost/gateway")
