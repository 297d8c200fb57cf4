// Shared by the scripts that drive one client library over every binding
// shape in one node process (aisdk.mjs, langchain.mjs): the models to call,
// and a runner that prints one "ok <case>" or "FAIL <case>: <why>" line per
// case, which clients_test.go turns into subtests.
export const url = need("RELAY_URL");
export const key = need("RELAY_KEY");
// models maps each binding shape to the Relay model bound to it.
export const models = JSON.parse(need("RELAY_MODELS"));

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

export function check(cond, what, got) {
  if (!cond) throw new Error(`${what}; got ${JSON.stringify(got)?.slice(0, 500)}`);
}

// A reply to a user turn echoes it; a reply to a tool result reports it.
export function checkText(text, kind) {
  const want = kind === "tool" ? "The tool returned" : "Hello from";
  check(typeof text === "string" && text.includes(want), `the reply should contain "${want}"`, text);
}

export const weatherSchema = {
  type: "object",
  properties: { city: { type: "string", description: "City name" } },
  required: ["city"],
};

// The three user turns of every conversation: a greeting, a question that
// takes a tool (the mock upstream calls get_weather for it), a follow-up.
export const turns = ["Hi there", "What is the weather in Paris?", "Thanks, and tomorrow?"];

// runAll runs fn(provider, shape, model, stream) for every provider, shape
// and mode, one after the other (a shared mock upstream answers in
// microseconds), printing a line per case.
export async function runAll(providers, fn) {
  for (const provider of providers) {
    for (const [shape, model] of Object.entries(models)) {
      for (const stream of [false, true]) {
        const name = `${provider}/${shape}/${stream ? "stream" : "plain"}`;
        try {
          await fn(provider, shape, model, stream);
          console.log(`ok ${name}`);
        } catch (err) {
          const why = `${err?.statusCode ?? err?.status ?? ""} ${err?.message ?? err} ${err?.responseBody ?? ""}`.replace(/\s+/g, " ");
          console.log(`FAIL ${name}: ${why.slice(0, 600)}`);
        }
      }
    }
  }
}
