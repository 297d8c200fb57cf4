package genai

import "testing"

func TestOperationAndProvider(t *testing.T) {
	for in, want := range map[string]string{
		"openai_chat": "chat", "openai_responses": "chat", "anthropic_messages": "chat", "relay_generate": "chat",
		"openai_embeddings": "embeddings", "gemini_generate_content": "generate_content",
		"gemini_embed_content": "embeddings", "anthropic_count_tokens": "", "none": "", "": "",
	} {
		if got := Operation(in); got != want {
			t.Errorf("Operation(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"openai": "openai", "anthropic": "anthropic", "google": "gcp.gemini", "ollama": "_OTHER", "": "_OTHER"} {
		if got := Provider(in); got != want {
			t.Errorf("Provider(%q) = %q, want %q", in, got, want)
		}
	}
}
