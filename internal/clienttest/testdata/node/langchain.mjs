// LangChain JS chat models pointed at Relay: ChatOpenAI, ChatAnthropic and
// ChatGoogleGenerativeAI. Each case is a 3-turn conversation with the
// returned messages pushed back, the second turn a tool call LangChain
// hands back and a ToolMessage with its result, invoked or streamed (the
// chunks concatenated, as LangChain's agents do).
import { ChatOpenAI } from "@langchain/openai";
import { ChatAnthropic } from "@langchain/anthropic";
import { ChatGoogleGenerativeAI } from "@langchain/google-genai";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import { url, key, check, checkText, weatherSchema, turns, runAll } from "./conversation.mjs";

const providers = {
  openai: (model) => new ChatOpenAI({ model, apiKey: key, configuration: { baseURL: `${url}/v1` }, maxRetries: 0 }),
  anthropic: (model) => new ChatAnthropic({ model, apiKey: key, anthropicApiUrl: url, maxRetries: 0 }),
  "google-genai": (model) => new ChatGoogleGenerativeAI({ model, apiKey: key, baseUrl: url, maxRetries: 0 }),
};

const weather = { type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: weatherSchema } };

async function ask(llm, stream, messages) {
  if (!stream) return llm.invoke(messages);
  let acc;
  for await (const chunk of await llm.stream(messages)) acc = acc ? acc.concat(chunk) : chunk;
  return acc;
}

const text = (m) => (typeof m.text === "string" ? m.text : typeof m.content === "string" ? m.content : "");

await runAll(Object.keys(providers), async (provider, shape, model, stream) => {
  const llm = providers[provider](model).bindTools([weather]);
  const messages = [];
  for (const [i, say] of turns.entries()) {
    messages.push(new HumanMessage(say));
    let reply = await ask(llm, stream, messages);
    messages.push(reply);
    if (i === 1) {
      const calls = reply.tool_calls ?? [];
      check(calls.length === 1 && calls[0].name === "get_weather", "one get_weather call", calls);
      messages.push(new ToolMessage({ tool_call_id: calls[0].id, content: "Sunny, 21 C" }));
      reply = await ask(llm, stream, messages);
      checkText(text(reply), "tool");
      messages.push(reply);
    } else {
      checkText(text(reply), "text");
    }
  }
});
