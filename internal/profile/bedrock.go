package profile

import "github.com/relay-llm/relay/internal/wire"

// bedrock is Amazon Bedrock's runtime: base URL
// https://bedrock-runtime.{region}.amazonaws.com; requests are signed with
// SigV4 (sigv4.go: the host's access_key_id and region, the host key's
// secret the secret access key, or {"secret_access_key","session_token"}
// JSON for temporary credentials). bedrock_converse bindings (any Bedrock
// model) call /model/{modelId}/converse[-stream], the path their
// translator builds; anthropic bindings (Claude, every Messages feature)
// go through InvokeModel[WithResponseStream] with the API version in the
// body and the model in the URL. Streams come back in AWS event-stream
// framing, which the proxy reads as SSE.
var bedrock = Profile{
	Name:   "bedrock",
	Title:  "Amazon Bedrock",
	Doc:    "Amazon Bedrock runtime, SigV4-signed: bedrock_converse bindings for any model (Converse / ConverseStream), anthropic bindings for Claude through InvokeModel. The host key's secret is the secret access key, or {\"secret_access_key\": …, \"session_token\": …} for temporary credentials.",
	Shapes: []wire.Shape{wire.ShapeBedrockConverse, wire.ShapeAnthropic},
	Params: []Param{
		{Name: "region", Required: true, Kind: ParamSegment, Doc: "The AWS region, e.g. us-east-1."},
		{Name: "access_key_id", Required: true, Kind: ParamSegment, Doc: "The AWS access key id; the host key's secret is its secret access key."},
	},
	Auth: []AuthRule{{Auth: AuthSigV4}},
	Paths: map[wire.Shape]string{
		wire.ShapeAnthropic: "/model/{model}/{stream:invoke|invoke-with-response-stream}",
	},
	Rewrites: []Rewrite{{
		Shape:   wire.ShapeAnthropic,
		Drop:    []string{"model", "stream"},
		Default: []Pair{{From: "anthropic_version", To: `"bedrock-2023-05-31"`}},
		// Claude Code and the Anthropic SDKs send betas as the
		// anthropic-beta header; InvokeModel reads them only from the
		// body, and refuses a name it does not serve.
		HeaderLists: []HeaderList{{Header: "anthropic-beta", Member: "anthropic_beta", Allow: bedrockBetas}},
	}},
}

// bedrockBetas are the anthropic-beta names Bedrock's InvokeModel serves
// for Claude (its Messages request reference); any other name the caller
// lists is left out of the body rather than failing the request.
var bedrockBetas = []string{
	"computer-use-2024-10-22",
	"computer-use-2025-01-24",
	"computer-use-2025-11-24",
	"token-efficient-tools-2025-02-19",
	"interleaved-thinking-2025-05-14",
	"output-128k-2025-02-19",
	"dev-full-thinking-2025-05-14",
	"context-1m-2025-08-07",
	"context-management-2025-06-27",
	"effort-2025-11-24",
	"tool-search-tool-2025-10-19",
	"tool-examples-2025-10-29",
	"fine-grained-tool-streaming-2025-05-14",
}
