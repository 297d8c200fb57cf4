// The official @google/genai SDK against Relay's native Gemini endpoints:
// a multi-turn chat (the SDK keeps the history) and a function-calling round
// trip, streamed (sendMessageStream) or not; a generateContent call on
// v1beta, the model list and token counting.
import { GoogleGenAI } from "@google/genai";
import { url, key, model, shape, stream, check, checkText, weatherSchema, run } from "./common.mjs";

// The SDK's default API version for the Gemini API ("v1"), and "v1beta",
// which many callers choose for preview features.
const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: url } });
const beta = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: url, apiVersion: "v1beta" } });

async function send(chat, message) {
  if (!stream) {
    const res = await chat.sendMessage({ message });
    return { text: res.text ?? "", calls: res.functionCalls ?? [] };
  }
  let text = "";
  const calls = [];
  for await (const chunk of await chat.sendMessageStream({ message })) {
    text += chunk.text ?? "";
    calls.push(...(chunk.functionCalls ?? []));
  }
  return { text, calls };
}

await run({
  async models_list() {
    const names = [];
    for await (const m of await ai.models.list()) names.push(m.name);
    check(names.includes(`models/${model}`), `the model list should name models/${model}`, names);
  },
  // Token counting passes through to gemini bindings only (docs/translation.md);
  // the others answer 400 in Gemini's error shape.
  async count_tokens() {
    if (shape !== "gemini") {
      const err = await ai.models.countTokens({ model, contents: "Hi there" }).then(() => null, (e) => e);
      check(err?.status === 400 || /400/.test(err?.message ?? ""), "400 through a binding that is not gemini", err?.message);
      return;
    }
    const n = await ai.models.countTokens({ model, contents: "Hi there" });
    check(n.totalTokens > 0, "totalTokens > 0", n);
  },
  async v1beta_generate() {
    let text = "";
    if (stream) {
      for await (const chunk of await beta.models.generateContentStream({ model, contents: "Hi there" })) text += chunk.text ?? "";
    } else {
      text = (await beta.models.generateContent({ model, contents: "Hi there" })).text;
    }
    checkText(text, "text");
  },
  async chat_multi_turn() {
    const chat = ai.chats.create({ model, config: { systemInstruction: "You are terse." } });
    for (const say of ["Hi there", "Tell me more", "And one more thing"]) {
      checkText((await send(chat, say)).text, "text");
    }
  },
  async function_call_round_trip() {
    const chat = ai.chats.create({
      model,
      config: { tools: [{ functionDeclarations: [{ name: "get_weather", description: "Weather in a city", parametersJsonSchema: weatherSchema }] }] },
    });
    const first = await send(chat, "What is the weather in Paris?");
    check(first.calls.length === 1 && first.calls[0].name === "get_weather", "one get_weather call", first);
    const after = await send(chat, [{ functionResponse: { name: "get_weather", id: first.calls[0].id, response: { output: "Sunny, 21 C" } } }]);
    checkText(after.text, "tool");
  },
});
