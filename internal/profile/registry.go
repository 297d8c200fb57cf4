package profile

import "github.com/relay-llm/relay/internal/wire"

// The registry: every profile a host may name. Rows are data; the code
// that reads them (URL, Body, Authorizers) has no case for any one
// profile. docs/profiles.md shows each row's host settings, and a test
// holds the page to this table.
var registry = [...]Profile{
	azureOpenAI,
	azureOpenAIV1,
	vertex,
	bedrock,
	// OpenAI-compatible servers (compat.go).
	vllm, ollama, lmStudio, llamaCpp, groq, mistral, deepseek, together, fireworks, openRouter,
}

// Entra ID parameters, shared by the Azure profiles: with tenant_id set
// the host key's secret is the app registration's client secret, else it
// is the resource's api-key.
var entraParams = []Param{
	{Name: "tenant_id", Kind: ParamSegment, Doc: "Microsoft Entra ID tenant (directory) id; set it to authenticate with a client secret instead of an api-key."},
	{Name: "client_id", Kind: ParamSegment, Doc: "The app registration's client (application) id; needed with tenant_id."},
	{Name: "token_url", Kind: ParamURL, Doc: "Token endpoint; default https://login.microsoftonline.com/{tenant_id}/oauth2/v2.0/token."},
	{Name: "scope", Kind: ParamText, Doc: "Token scope; default https://cognitiveservices.azure.com/.default."},
}

var azureAuth = []AuthRule{{Param: "tenant_id", Auth: AuthEntra}, {Auth: AuthAPIKey}}

// azureOpenAI is Azure OpenAI's deployment surface: base URL
// https://{resource}.openai.azure.com/openai, the binding's upstream model
// is the deployment name.
var azureOpenAI = Profile{
	Name:   "azure_openai",
	Title:  "Azure OpenAI (deployments)",
	Doc:    "Azure OpenAI and Azure AI Foundry deployments: /openai/deployments/{deployment}/… with ?api-version; the binding's upstream model is the deployment name.",
	Shapes: []wire.Shape{wire.ShapeOpenAI, wire.ShapeOpenAIResponses},
	Params: append([]Param{
		{Name: "api_version", Required: true, Kind: ParamSegment, Doc: "The api-version query parameter, e.g. 2024-10-21."},
	}, entraParams...),
	Auth: azureAuth,
	Paths: map[wire.Shape]string{
		wire.ShapeOpenAI:          "/deployments/{model}{op}",
		wire.ShapeOpenAIResponses: "{op}",
	},
	Query:  "api-version={api_version}",
	Answer: Answer{ContentFilter: true},
}

// azureOpenAIV1 is Azure OpenAI's /openai/v1 surface: OpenAI's paths
// under https://{resource}.openai.azure.com/openai/v1, the model in the
// body.
var azureOpenAIV1 = Profile{
	Name:   "azure_openai_v1",
	Title:  "Azure OpenAI (v1 API)",
	Doc:    "Azure OpenAI's /openai/v1/… surface: OpenAI's own paths, the deployment name as the model.",
	Shapes: []wire.Shape{wire.ShapeOpenAI, wire.ShapeOpenAIResponses},
	Params: append([]Param{
		{Name: "api_version", Kind: ParamSegment, Doc: "An api-version query parameter (e.g. preview); none by default."},
	}, entraParams...),
	Auth:   azureAuth,
	Query:  "api-version={api_version}",
	Answer: Answer{ContentFilter: true},
}

// vertex is Google Vertex AI: base URL
// https://{location}-aiplatform.googleapis.com/v1 (or
// https://aiplatform.googleapis.com/v1 for the global location); the host
// key's secret is a service account's JSON key.
var vertex = Profile{
	Name:   "vertex",
	Title:  "Google Vertex AI",
	Doc:    "Gemini (publishers/google), Anthropic Claude (publishers/anthropic, rawPredict) and the OpenAI-compatible endpoint on Vertex AI, with a service account's token.",
	Shapes: []wire.Shape{wire.ShapeGemini, wire.ShapeAnthropic, wire.ShapeOpenAI},
	Params: []Param{
		{Name: "project", Required: true, Kind: ParamSegment, Doc: "The Google Cloud project id."},
		{Name: "location", Required: true, Kind: ParamSegment, Doc: "The region (us-central1, europe-west4 …) or global."},
		{Name: "token_url", Kind: ParamURL, Doc: "Token endpoint; default the service account's token_uri (https://oauth2.googleapis.com/token)."},
	},
	Auth: []AuthRule{{Auth: AuthGoogle}},
	Paths: map[wire.Shape]string{
		wire.ShapeGemini:    "/projects/{project}/locations/{location}/publishers/google/models/{model}:{method}",
		wire.ShapeAnthropic: "/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:{stream:rawPredict|streamRawPredict}",
		wire.ShapeOpenAI:    "/projects/{project}/locations/{location}/endpoints/openapi{op}",
	},
	Rewrites: []Rewrite{{
		// The model is in the URL, the API version in the body.
		Shape:   wire.ShapeAnthropic,
		Drop:    []string{"model"},
		Default: []Pair{{From: "anthropic_version", To: `"vertex-2023-10-16"`}},
	}},
}
