// A small openapi-fetch client of Relay's control API, typed by
// openapi-typescript from openapi/control.yaml (gen/relay.d.ts). ts_test.go
// type-checks it with tsc and runs it with tsx against a running control API:
// RELAY_URL and RELAY_ADMIN_TOKEN say where and how. It exits non-zero on
// the first surprise.
import createClient from "openapi-fetch";
import type { components, paths } from "./gen/relay";

// Only what this script uses of Node, so it needs no @types/node.
declare const process: { env: Record<string, string | undefined>; exitCode?: number };

type Host = components["schemas"]["Host"];
type ApiError = components["schemas"]["Error"];

function need(cond: unknown, what: string): asserts cond {
  if (!cond) throw new Error(`check failed: ${what}`);
}

const baseUrl = process.env.RELAY_URL;
const token = process.env.RELAY_ADMIN_TOKEN;
need(baseUrl && token, "RELAY_URL and RELAY_ADMIN_TOKEN are set");

const relay = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });

async function main(): Promise<void> {
  // Create.
  const created = await relay.POST("/api/hosts", {
    body: { slug: "ts-host", provider: "openai", base_url: "https://api.example.com/v1", name: "From TypeScript" },
  });
  need(created.response.status === 201 && created.data, `create answered ${created.response.status}`);
  const host: Host = created.data;
  need(host.slug === "ts-host" && host.enabled && host.connect_timeout_ms === 5000, "the created host has its defaults");

  // List (paged) and get.
  const listed = await relay.GET("/api/hosts", { params: { query: { limit: 10 } } });
  need(listed.data?.items.some((h) => h.id === host.id), "the host is listed");
  need(listed.data?.next_cursor === null, "one page only");
  const got = await relay.GET("/api/hosts/{id}", { params: { path: { id: host.id } } });
  need(got.data?.name === "From TypeScript", "get returns the host");

  // Update.
  const patched = await relay.PATCH("/api/hosts/{id}", { params: { path: { id: host.id } }, body: { enabled: false } });
  need(patched.data?.enabled === false && patched.data.slug === "ts-host", "patch changed only enabled");

  // An error case: a slug that breaks the pattern is a 400 naming the field.
  const bad = await relay.POST("/api/hosts", {
    body: { slug: "Not A Slug", provider: "openai", base_url: "https://x.example.com" },
  });
  const badErr: ApiError | undefined = bad.error;
  need(bad.response.status === 400 && badErr?.error.code === "invalid_request", `bad slug answered ${bad.response.status}`);
  need(badErr.error.details?.some((d) => d.field === "slug"), "the error names slug");

  // Delete, then it is gone.
  const deleted = await relay.DELETE("/api/hosts/{id}", { params: { path: { id: host.id } } });
  need(deleted.response.status === 204, `delete answered ${deleted.response.status}`);
  const gone = await relay.GET("/api/hosts/{id}", { params: { path: { id: host.id } } });
  need(gone.response.status === 404 && gone.error?.error.code === "not_found", "the deleted host is not found");

  console.log("ts smoke: ok");
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
