// Package mcpgw is Relay's MCP gateway: /mcp on the inference plane speaks
// the Model Context Protocol (Streamable HTTP, through the official Go SDK,
// github.com/modelcontextprotocol/go-sdk) to agents, authenticated with the
// same relay keys and inference tokens as model calls, and fronts the MCP
// servers of the catalog (snapshot.MCPServer), speaking MCP to them with the
// SDK's client.
//
// It owns: the tools a caller sees (those of the servers its policy grants,
// named "<server>__<tool>", without the ones withheld because their
// fingerprint is not approved), the forwarding of tools/call to the server
// with the server's credential and under the egress rules, the per-key
// request limit of a server's rate limit (through the limiter, as model
// calls), and one usage event per tools/call. Prompts follow the tools'
// grants ("<server>__<prompt>", one namespace with tools), resources the
// grant of a whole server (URIs presented as "mcp+relay://<server>/<uri>").
//
// It reads the catalog only from the snapshot: no Postgres on this path.
// The server side is stateless (no Mcp-Session-Id), so any pod serves any
// request of a session. Upstream sessions are kept per pod and per server,
// shared by callers (the credential is the server's, not the caller's).
// stdio servers are out of scope.
package mcpgw
