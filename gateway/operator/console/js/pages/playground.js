// The playground: a streamed chat request with the signed-in key, tokens shown as they
// arrive.

import { stream } from "../api.js";
import { $ } from "../dom.js";

async function play() {
  const output = $("play-output");
  const meta = $("play-meta");
  const send = $("play-send");
  output.textContent = ""; meta.textContent = "waiting for the first token..."; send.disabled = true;
  delete output.dataset.done;
  try {
    const response = await stream("/v1/chat/completions", {
      model: $("play-model").value,
      messages: [{ role: "user", content: $("play-prompt").value }],
      stream: true,
    });
    meta.textContent = "served by " + (response.headers.get("X-Service-Model-Used") || "?");
    await readEvents(response.body.getReader(), (chunk) => {
      if (chunk.error) throw new Error(chunk.error.message);
      for (const choice of chunk.choices || []) output.textContent += (choice.delta && choice.delta.content) || "";
    });
    meta.textContent += " - done";
    output.dataset.done = "true";
  } catch (error) {
    meta.textContent = "failed: " + error.message;
  } finally {
    send.disabled = false;
  }
}

async function readEvents(reader, onChunk) {
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end); buffer = buffer.slice(end + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") return;
        onChunk(JSON.parse(data));
      }
    }
  }
}

export function init(ui) {
  ui.submit("play-form", play);
}
