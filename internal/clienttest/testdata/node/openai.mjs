// The official openai SDK: multi-turn Chat Completions with the returned
// message pushed back, a tool round trip, multi-turn Responses with the
// output items pushed back, and the model list — streamed (the SDK's stream helpers) or not.
import OpenAI from "openai";
import { url, key, model, stream, check, checkText, weatherSchema, run } from "./common.mjs";

const client = new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 });
const tools = [{ type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: weatherSchema } }];

async function chat(body) {
  if (!stream) return (await client.chat.completions.create({ model, ...body })).choices[0].message;
  const s = client.chat.completions.stream({ model, ...body });
  const done = await s.finalChatCompletion();
  return done.choices[0].message;
}

async function respond(input, extra = {}) {
  if (!stream) return client.responses.create({ model, input, ...extra });
  return client.responses.stream({ model, input, ...extra }).finalResponse();
}

await run({
  async models_list() {
    const ids = (await client.models.list()).data.map((m) => m.id);
    check(ids.includes(model), `the model list should name ${model}`, ids);
  },
  async chat_multi_turn() {
    const messages = [{ role: "system", content: "You are terse." }];
    for (const say of ["Hi there", "Tell me more", "And one more thing"]) {
      messages.push({ role: "user", content: say });
      const msg = await chat({ messages });
      checkText(msg.content, "text");
      messages.push(msg);
    }
  },
  async chat_tool_round_trip() {
    const messages = [{ role: "user", content: "What is the weather in Paris?" }];
    const call = await chat({ messages, tools });
    check(call.tool_calls?.length === 1 && call.tool_calls[0].function.name === "get_weather", "one get_weather call", call);
    JSON.parse(call.tool_calls[0].function.arguments);
    messages.push(call);
    messages.push({ role: "tool", tool_call_id: call.tool_calls[0].id, content: "Sunny, 21 C" });
    const after = await chat({ messages, tools });
    checkText(after.content, "tool");
    messages.push(after, { role: "user", content: "Thanks, and tomorrow?" });
    const third = await chat({ messages, tools, tool_choice: "none" });
    checkText(third.content, "text");
  },
  async responses_multi_turn() {
    let input = [];
    for (const say of ["Hi there", "Tell me more", "And one more thing"]) {
      input.push({ role: "user", content: say });
      const res = await respond(input, { instructions: "You are terse.", store: false });
      checkText(res.output_text, "text");
      input = [...input, ...res.output];
    }
  },
  async responses_tool_round_trip() {
    const rtools = [{ type: "function", name: "get_weather", description: "Weather in a city", parameters: weatherSchema, strict: false }];
    let input = [{ role: "user", content: "What is the weather in Paris?" }];
    const res = await respond(input, { tools: rtools, store: false });
    const call = res.output.find((o) => o.type === "function_call");
    check(call?.name === "get_weather", "a get_weather function_call", res.output);
    input = [...input, ...res.output, { type: "function_call_output", call_id: call.call_id, output: "Sunny, 21 C" }];
    const after = await respond(input, { tools: rtools, store: false });
    checkText(after.output_text, "tool");
  },
});
