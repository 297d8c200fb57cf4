// The official @anthropic-ai/sdk: multi-turn Messages with the returned
// content pushed back and a tool round trip, streamed (messages.stream and
// finalMessage) or not; the model list and token counting.
import Anthropic from "@anthropic-ai/sdk";
import { url, key, model, shape, stream, check, checkText, weatherSchema, run } from "./common.mjs";

const client = new Anthropic({ apiKey: key, baseURL: url, maxRetries: 0 });
const tools = [{ name: "get_weather", description: "Weather in a city", input_schema: weatherSchema }];

async function create(body) {
  const params = { model, max_tokens: 256, ...body };
  if (!stream) return client.messages.create(params);
  return client.messages.stream(params).finalMessage();
}

const text = (msg) => msg.content.filter((b) => b.type === "text").map((b) => b.text).join("");

await run({
  async models_list() {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    check(ids.includes(model), `the model list should name ${model}`, ids);
  },
  // Token counting passes through to anthropic bindings only (README); the
  // others answer 400.
  async count_tokens() {
    const body = { model, system: "You are terse.", messages: [{ role: "user", content: "Hi there" }] };
    if (shape !== "anthropic") {
      const err = await client.messages.countTokens(body).then(() => null, (e) => e);
      check(err?.status === 400, "400 through a binding that is not anthropic", err?.message);
      return;
    }
    const n = await client.messages.countTokens(body);
    check(n.input_tokens > 0, "input_tokens > 0", n);
  },
  async messages_multi_turn() {
    const messages = [];
    for (const say of ["Hi there", "Tell me more", "And one more thing"]) {
      messages.push({ role: "user", content: say });
      const msg = await create({ system: "You are terse.", messages });
      checkText(text(msg), "text");
      messages.push({ role: msg.role, content: msg.content });
    }
  },
  async messages_tool_round_trip() {
    const messages = [{ role: "user", content: "What is the weather in Paris?" }];
    const msg = await create({ messages, tools });
    const use = msg.content.find((b) => b.type === "tool_use");
    check(msg.stop_reason === "tool_use" && use?.name === "get_weather", "a get_weather tool_use", msg);
    messages.push({ role: msg.role, content: msg.content });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "Sunny, 21 C" }] });
    const after = await create({ messages, tools });
    checkText(text(after), "tool");
    messages.push({ role: after.role, content: after.content }, { role: "user", content: "Thanks, and tomorrow?" });
    const third = await create({ messages, tools, tool_choice: { type: "none" } });
    checkText(text(third), "text");
  },
});
