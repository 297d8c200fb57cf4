package wire

import (
	"strings"
)

// Shape is a wire shape: what a caller speaks or what Relay speaks to a host
// through a binding.
type Shape string

// Upstream shapes a binding can speak.
const (
	ShapeOpenAI          Shape = "openai"
	ShapeOpenAIResponses Shape = "openai_responses"
	ShapeAnthropic       Shape = "anthropic"
	ShapeGemini          Shape = "gemini"
	// ShapeBedrockConverse is AWS Bedrock's Converse API
	// (/model/{modelId}/converse and /converse-stream), which every
	// Bedrock model speaks; its streams come in AWS event-stream framing.
	ShapeBedrockConverse Shape = "bedrock_converse"
)

// Inbound is the wire shape a caller speaks, fixed by the endpoint it calls.
type Inbound uint8

// Inbound shapes.
const (
	InboundNone       Inbound = iota
	InboundChat               // POST /v1/chat/completions
	InboundEmbeddings         // POST /v1/embeddings
	InboundResponses          // POST /v1/responses
	InboundMessages           // POST /v1/messages
	// InboundGenerate is Relay's own canonical shape (POST /v1/generate):
	// always translated, never passed through. Its errors are OpenAI-style
	// error bodies, Relay's own error shape.
	InboundGenerate
	// InboundCountTokens is Anthropic's token counting (POST
	// /v1/messages/count_tokens): a Messages body, answered with
	// {"input_tokens": n}; served by anthropic bindings only.
	InboundCountTokens
	// InboundGemini is Gemini's own generateContent and
	// streamGenerateContent (POST /v1beta/models/{model}:generateContent):
	// the model and whether to stream come from the URL path, not the body.
	InboundGemini
	// InboundGeminiCountTokens is Gemini's countTokens: served by gemini
	// bindings only.
	InboundGeminiCountTokens
	// InboundGeminiEmbed is Gemini's embedContent (one content, one
	// vector); InboundGeminiBatchEmbed its batchEmbedContents.
	InboundGeminiEmbed
	InboundGeminiBatchEmbed
	// OpenAI's endpoints beyond chat (endpoints.go in the proxy): each is
	// served by openai bindings, bytes through, at the same path.
	InboundCompletions     // POST /v1/completions (legacy), streamed too
	InboundImages          // POST /v1/images/generations
	InboundImageEdits      // POST /v1/images/edits (multipart or JSON)
	InboundImageVariations // POST /v1/images/variations (multipart)
	InboundSpeech          // POST /v1/audio/speech: audio bytes back
	InboundTranscriptions  // POST /v1/audio/transcriptions (multipart)
	InboundTranslations    // POST /v1/audio/translations (multipart)
	InboundModerations     // POST /v1/moderations
	InboundRerank          // POST /v1/rerank: the Cohere/Jina shape
)

// endpointPaths are the provider paths of the inbound shapes that pass
// through at their own path.
var endpointPaths = [...]string{
	InboundCompletions:     "/v1/completions",
	InboundImages:          "/v1/images/generations",
	InboundImageEdits:      "/v1/images/edits",
	InboundImageVariations: "/v1/images/variations",
	InboundSpeech:          "/v1/audio/speech",
	InboundTranscriptions:  "/v1/audio/transcriptions",
	InboundTranslations:    "/v1/audio/translations",
	InboundModerations:     "/v1/moderations",
	InboundRerank:          "/v1/rerank",
}

// EndpointPath is the path of an endpoint shape (InboundCompletions …
// InboundRerank), "" for the others.
func (in Inbound) EndpointPath() string {
	if int(in) < len(endpointPaths) {
		return endpointPaths[in]
	}
	return ""
}

// Multipart reports whether the shape's body may be multipart/form-data.
func (in Inbound) Multipart() bool {
	switch in {
	case InboundImageEdits, InboundImageVariations, InboundTranscriptions, InboundTranslations:
		return true
	}
	return false
}

// ModelKind is the catalog kind of model an inbound shape calls: "chat",
// "embedding", "image", "audio", "moderation" or "rerank".
func (in Inbound) ModelKind() string {
	switch in {
	case InboundEmbeddings, InboundGeminiEmbed, InboundGeminiBatchEmbed:
		return "embedding"
	case InboundImages, InboundImageEdits, InboundImageVariations:
		return "image"
	case InboundSpeech, InboundTranscriptions, InboundTranslations:
		return "audio"
	case InboundModerations:
		return "moderation"
	case InboundRerank:
		return "rerank"
	}
	return "chat"
}

// String names the shape in logs and usage records.
func (in Inbound) String() string {
	switch in {
	case InboundChat:
		return "openai_chat"
	case InboundEmbeddings:
		return "openai_embeddings"
	case InboundResponses:
		return "openai_responses"
	case InboundMessages:
		return "anthropic_messages"
	case InboundGenerate:
		return "relay_generate"
	case InboundCountTokens:
		return "anthropic_count_tokens"
	case InboundGemini:
		return "gemini"
	case InboundGeminiCountTokens:
		return "gemini_count_tokens"
	case InboundGeminiEmbed:
		return "gemini_embed_content"
	case InboundGeminiBatchEmbed:
		return "gemini_batch_embed_contents"
	case InboundCompletions:
		return "openai_completions"
	case InboundImages:
		return "openai_images"
	case InboundImageEdits:
		return "openai_image_edits"
	case InboundImageVariations:
		return "openai_image_variations"
	case InboundSpeech:
		return "openai_speech"
	case InboundTranscriptions:
		return "openai_transcriptions"
	case InboundTranslations:
		return "openai_translations"
	case InboundModerations:
		return "openai_moderations"
	case InboundRerank:
		return "rerank"
	}
	return "none"
}

// Dialect is the family whose error and list bodies a caller expects.
func (in Inbound) Dialect() Dialect {
	switch in {
	case InboundMessages, InboundCountTokens:
		return DialectAnthropic
	case InboundGemini, InboundGeminiCountTokens, InboundGeminiEmbed, InboundGeminiBatchEmbed:
		return DialectGemini
	}
	return DialectOpenAI
}

// GeminiMethod is the Gemini method an inbound Gemini shape calls, as it
// follows the model in the URL path ("generateContent" …); "" for the
// other shapes.
func (in Inbound) GeminiMethod(stream bool) string {
	switch in {
	case InboundGemini:
		if stream {
			return "streamGenerateContent"
		}
		return "generateContent"
	case InboundGeminiCountTokens:
		return "countTokens"
	case InboundGeminiEmbed:
		return "embedContent"
	case InboundGeminiBatchEmbed:
		return "batchEmbedContents"
	}
	return ""
}

// Dialect is the family of wire shapes a caller belongs to, which decides
// how its errors and model lists look.
type Dialect uint8

// Dialects.
const (
	DialectOpenAI Dialect = iota
	DialectAnthropic
	// DialectGemini is Gemini's: errors as {"error":{"code","message",
	// "status"}}, models as {"models":[…]}.
	DialectGemini
)

// UpstreamPath is the provider path for an inbound operation served by a
// binding of the given shape, or "" when the pair has no path (Gemini puts
// the model in the path; its translator builds that).
func UpstreamPath(in Inbound, up Shape) string {
	switch up {
	case ShapeOpenAI:
		if in == InboundEmbeddings {
			return "/v1/embeddings"
		}
		if p := in.EndpointPath(); p != "" {
			return p
		}
		return "/v1/chat/completions"
	case ShapeOpenAIResponses:
		return "/v1/responses"
	case ShapeAnthropic:
		if in == InboundCountTokens {
			return "/v1/messages/count_tokens"
		}
		return "/v1/messages"
	}
	return ""
}

// JoinURL joins a host's base URL and a provider path that starts with
// /v1 (or Gemini's /v1beta), tolerating a base URL that already ends in
// that version.
func JoinURL(base, path string) string {
	base = strings.TrimRight(base, "/")
	if strings.HasSuffix(base, "/v1") && strings.HasPrefix(path, "/v1/") {
		return base + path[3:]
	}
	if strings.HasSuffix(base, "/v1beta") && strings.HasPrefix(path, "/v1beta/") {
		return base + path[7:]
	}
	return base + path
}
