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
	}},
}
