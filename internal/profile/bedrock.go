package profile

import "github.com/relay-llm/relay/internal/wire"

// bedrock is Amazon Bedrock's runtime: base URL
// https://bedrock-runtime.{region}.amazonaws.com; requests are signed with
// SigV4 (the host key's secret is the AWS secret access key). Anthropic
// models go through InvokeModel[WithResponseStream] with the API version
// in the body and the model in the URL.
//
// This row is the Bedrock work's (issue 25 item 2): it adds its binding
// shape and the SigV4 Authorizer (Authorizers).
var bedrock = Profile{
	Name:   "bedrock",
	Title:  "Amazon Bedrock",
	Doc:    "Amazon Bedrock runtime, SigV4-signed.",
	Shapes: []wire.Shape{wire.ShapeAnthropic},
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
