// Shared by the client scripts: the settings clients_test.go passes in the
// environment, and checks that fail the run with a message.
export const url = need("RELAY_URL");
export const key = need("RELAY_KEY");
export const model = need("RELAY_MODEL");
export const shape = need("RELAY_SHAPE"); // the binding shape of the model
export const stream = process.env.RELAY_STREAM === "1";

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

export function check(cond, what, got) {
  if (!cond) throw new Error(`${what}; got ${JSON.stringify(got)}`);
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

// run runs the named scenarios and prints one "ok <name>" line each; the
// first failure exits 1 with the error.
export async function run(scenarios) {
  for (const [name, fn] of Object.entries(scenarios)) {
    try {
      await fn();
      console.log(`ok ${name}`);
    } catch (err) {
      console.log(`FAIL ${name}: ${err?.status ?? ""} ${err?.message ?? err}`);
      process.exitCode = 1;
    }
  }
}
