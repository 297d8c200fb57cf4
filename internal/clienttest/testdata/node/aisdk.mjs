// The AI SDK (`ai`) with each of its providers pointed at Relay: OpenAI's
// default provider (the Responses API), OpenAI's .chat (Chat Completions),
// Anthropic, Google and OpenAI-compatible. Each case is a 3-turn
// conversation with the response messages pushed back, the second turn a
// tool round trip the SDK runs itself, plain (generateText) or streamed
// (streamText).
import { generateText, streamText, tool, jsonSchema, isStepCount } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { url, key, check, checkText, weatherSchema, turns, runAll } from "./conversation.mjs";

const openai = createOpenAI({ baseURL: `${url}/v1`, apiKey: key });
const anthropic = createAnthropic({ baseURL: `${url}/v1`, apiKey: key });
const google = createGoogleGenerativeAI({ baseURL: `${url}/v1beta`, apiKey: key });
const compatible = createOpenAICompatible({ name: "relay", baseURL: `${url}/v1`, apiKey: key });

const providers = {
  openai: (m) => openai(m),
  "openai-chat": (m) => openai.chat(m),
  anthropic: (m) => anthropic(m),
  google: (m) => google(m),
  "openai-compatible": (m) => compatible(m),
};

const tools = {
  get_weather: tool({
    description: "Weather in a city",
    inputSchema: jsonSchema(weatherSchema),
    execute: async () => "Sunny, 21 C",
  }),
};

async function ask(stream, args) {
  const opts = { maxRetries: 0, ...args };
  if (!stream) {
    const r = await generateText(opts);
    return { text: r.text, steps: r.steps, messages: r.response.messages };
  }
  let failure;
  const r = streamText({ ...opts, onError: ({ error }) => { failure = error; } });
  const text = await r.text;
  const steps = await r.steps;
  const messages = (await r.response).messages;
  if (failure) throw failure;
  return { text, steps, messages };
}

await runAll(Object.keys(providers), async (provider, shape, modelName, stream) => {
  const model = providers[provider](modelName);
  const messages = [];
  for (const [i, say] of turns.entries()) {
    messages.push({ role: "user", content: say });
    const r = await ask(stream, { model, system: "You are terse.", messages, tools, stopWhen: isStepCount(3) });
    if (i === 1) {
      const calls = r.steps.flatMap((s) => s.toolCalls ?? []);
      check(calls.length === 1 && calls[0].toolName === "get_weather", "one get_weather call", calls);
      checkText(r.text, "tool");
    } else {
      checkText(r.text, "text");
    }
    messages.push(...r.messages);
  }
});
