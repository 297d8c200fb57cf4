package profile

import "github.com/relay-llm/relay/internal/wire"

// OpenAI-compatible servers: OpenAI's chat and embeddings paths under the
// host's base URL, with each server's known departures from OpenAI as
// rewrites and answer quirks. docs/profiles.md gives each one's host
// settings.

// Common rewrites of the chat body.
var (
	// noDeveloper: the server's chat template knows system, not
	// OpenAI's newer developer role.
	noDeveloper = []Pair{{From: "developer", To: "system"}}
	// maxTokens: the server reads max_tokens, not max_completion_tokens.
	maxTokens = []Pair{{From: "max_completion_tokens", To: "max_tokens"}}
)

var compatShapes = []wire.Shape{wire.ShapeOpenAI}

var vllm = Profile{
	Name: "vllm", Title: "vLLM",
	Doc:    "vLLM's OpenAI-compatible server (vllm serve); base URL http://{host}:8000/v1. Reasoning models' thoughts come as reasoning_content.",
	Shapes: compatShapes,
	Answer: Answer{Reasoning: "reasoning_content"},
}

var ollama = Profile{
	Name: "ollama", Title: "Ollama",
	Doc:    "Ollama's OpenAI-compatible API; base URL http://{host}:11434/v1, no credential needed.",
	Shapes: compatShapes,
	Auth:   []AuthRule{{Auth: AuthBearer}},
	Rewrites: []Rewrite{{
		Shape: wire.ShapeOpenAI, Op: "/chat/completions", Rename: maxTokens, Roles: noDeveloper,
	}},
	Answer: Answer{Reasoning: "reasoning"},
}

var lmStudio = Profile{
	Name: "lmstudio", Title: "LM Studio",
	Doc:    "LM Studio's local server; base URL http://{host}:1234/v1. It sends no usage on streams: Relay records the usage of such a stream as unknown.",
	Shapes: compatShapes,
	Rewrites: []Rewrite{{
		Shape: wire.ShapeOpenAI, Op: "/chat/completions", Drop: []string{"stream_options"}, Rename: maxTokens, Roles: noDeveloper,
	}},
	Answer: Answer{StreamUsage: UsageNever},
}

var llamaCpp = Profile{
	Name: "llamacpp", Title: "llama.cpp server",
	Doc:    "llama.cpp's llama-server; base URL http://{host}:8080/v1. Reasoning comes as reasoning_content (--reasoning-format deepseek).",
	Shapes: compatShapes,
	Rewrites: []Rewrite{{
		Shape: wire.ShapeOpenAI, Op: "/chat/completions", Rename: maxTokens, Roles: noDeveloper,
	}},
	Answer: Answer{Reasoning: "reasoning_content"},
}

var groq = Profile{
	Name: "groq", Title: "Groq",
	Doc:    "GroqCloud; base URL https://api.groq.com/openai/v1.",
	Shapes: compatShapes,
	Rewrites: []Rewrite{{
		Shape: wire.ShapeOpenAI, Op: "/chat/completions", Roles: noDeveloper,
	}},
	Answer: Answer{Reasoning: "reasoning"},
}

var mistral = Profile{
	Name: "mistral", Title: "Mistral AI",
	Doc:    "Mistral's La Plateforme; base URL https://api.mistral.ai/v1. It refuses stream_options and sends usage in every stream's last chunk.",
	Shapes: compatShapes,
	Rewrites: []Rewrite{{
		Shape: wire.ShapeOpenAI, Op: "/chat/completions", Drop: []string{"stream_options"}, Rename: maxTokens, Roles: noDeveloper,
	}},
	Answer: Answer{StreamUsage: UsageAlways},
}

var deepseek = Profile{
	Name: "deepseek", Title: "DeepSeek",
	Doc:    "DeepSeek's API; base URL https://api.deepseek.com/v1. deepseek-reasoner's thoughts come as reasoning_content.",
	Shapes: compatShapes,
	Rewrites: []Rewrite{{
		Shape: wire.ShapeOpenAI, Op: "/chat/completions", Rename: maxTokens, Roles: noDeveloper,
	}},
	Answer: Answer{Reasoning: "reasoning_content"},
}

var together = Profile{
	Name: "together", Title: "Together AI",
	Doc:    "Together AI; base URL https://api.together.xyz/v1. Usage comes in every stream's last chunk.",
	Shapes: compatShapes,
	Rewrites: []Rewrite{{
		Shape: wire.ShapeOpenAI, Op: "/chat/completions", Rename: maxTokens, Roles: noDeveloper,
	}},
	Answer: Answer{StreamUsage: UsageAlways, Reasoning: "reasoning"},
}

var fireworks = Profile{
	Name: "fireworks", Title: "Fireworks AI",
	Doc:    "Fireworks AI; base URL https://api.fireworks.ai/inference/v1. Usage comes in every stream's last chunk.",
	Shapes: compatShapes,
	Rewrites: []Rewrite{{
		Shape: wire.ShapeOpenAI, Op: "/chat/completions", Rename: maxTokens, Roles: noDeveloper,
	}},
	Answer: Answer{StreamUsage: UsageAlways, Reasoning: "reasoning_content"},
}

var openRouter = Profile{
	Name: "openrouter", Title: "OpenRouter",
	Doc:    "OpenRouter; base URL https://openrouter.ai/api/v1. Usage comes in every stream's last chunk, reasoning as reasoning.",
	Shapes: compatShapes,
	Rewrites: []Rewrite{{
		Shape: wire.ShapeOpenAI, Op: "/chat/completions", Rename: maxTokens,
	}},
	Answer: Answer{StreamUsage: UsageAlways, Reasoning: "reasoning"},
}
