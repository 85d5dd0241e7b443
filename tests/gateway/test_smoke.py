import openai

from gateway.app.server import RunningGateway


async def test_chat_through_the_official_client(
    gateway: RunningGateway, client: openai.AsyncOpenAI
) -> None:
    answer = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hello"}]
    )
    assert answer.choices[0].message.content
    assert answer.usage is not None and answer.usage.completion_tokens > 0
