// A small openapi-fetch client of Relay's /v1/generate, typed by
// openapi-typescript from openapi/inference.yaml (gen/inference.d.ts).
// ts_test.go type-checks it with tsc and runs it with tsx against Relay's
// inference handler in front of the mock upstream: RELAY_URL, RELAY_KEY and
// RELAY_MODELS (comma-separated, one model per binding shape) say where and
// with what. It exits non-zero on the first surprise.
import createClient from "openapi-fetch";
import type { components, paths } from "./gen/inference";

declare const process: { env: Record<string, string | undefined>; exitCode?: number };

type GenerateResponse = components["schemas"]["GenerateResponse"];

function need(cond: unknown, what: string): asserts cond {
  if (!cond) throw new Error(`check failed: ${what}`);
}

const baseUrl = process.env.RELAY_URL;
const key = process.env.RELAY_KEY;
const models = (process.env.RELAY_MODELS ?? "").split(",").filter((m) => m !== "");
need(baseUrl && key && models.length > 0, "RELAY_URL, RELAY_KEY and RELAY_MODELS are set");

const relay = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${key}` } });

async function main(): Promise<void> {
  for (const model of models) {
    const { data, error, response } = await relay.POST("/v1/generate", {
      params: { header: { "X-Relay-Usage": "full" } },
      body: {
        model,
        system: "Be brief.",
        messages: [{ role: "user", content: [{ type: "text", text: "Hello from TypeScript" }] }],
        max_output_tokens: 200,
      },
    });
    // The 200 documents both the JSON body and the stream's events; a
    // request without stream gets the body, which alone has content.
    need(response.status === 200 && data && !error && "content" in data, `${model}: answered ${response.status}`);
    const gen: GenerateResponse = data;
    const first = gen.content[0];
    need(first?.type === "text" && first.text.startsWith("Hello from"), `${model}: a text part`);
    need(gen.finish_reason === "stop", `${model}: finished with ${gen.finish_reason}`);
    need(gen.usage.input_tokens > 0 && gen.usage.output_tokens > 0, `${model}: usage`);
    need((gen.usage.cost_nanos ?? 0) > 0, `${model}: X-Relay-Usage: full priced it`);
    need(response.headers.get("X-Relay-Request-ID"), `${model}: a request id`);
  }

  // An error is the documented error body.
  const bad = await relay.POST("/v1/generate", { body: { model: "no-such-model", messages: [] } });
  need(bad.response.status === 404 && bad.error?.error.code === "model_not_found", `unknown model answered ${bad.response.status}`);
  console.log("ts generate: ok");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
