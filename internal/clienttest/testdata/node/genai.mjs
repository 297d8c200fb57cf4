// The official @google/genai SDK against Relay's native Gemini endpoints:
// a multi-turn chat (the SDK keeps the history) and a function-calling round
// trip, streamed (sendMessageStream) or not.
import { GoogleGenAI } from "@google/genai";
import { url, key, model, stream, check, checkText, weatherSchema, run } from "./common.mjs";

const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: url } });

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
