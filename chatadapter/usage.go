package chatadapter

// Usage is what a request cost, in tokens, as the provider reported it,
// in one form for every provider: PromptTokens counts every token of the
// prompt, those read from or written to the provider's cache included.
type Usage struct {
	// PromptTokens is the prompt's size: OpenAI's prompt_tokens or
	// input_tokens; Anthropic's input_tokens plus
	// cache_creation_input_tokens and cache_read_input_tokens; Gemini's
	// promptTokenCount.
	PromptTokens int `json:"promptTokens"`
	// CompletionTokens is what the model generated, its reasoning
	// included: OpenAI's completion_tokens or output_tokens; Anthropic's
	// output_tokens; Gemini's candidatesTokenCount plus
	// thoughtsTokenCount.
	CompletionTokens int `json:"completionTokens"`
	// CachedTokens is the part of PromptTokens read from the cache:
	// OpenAI's cached_tokens, Anthropic's cache_read_input_tokens,
	// Gemini's cachedContentTokenCount.
	CachedTokens int `json:"cachedTokens,omitempty"`
	// CacheWriteTokens is the part of PromptTokens written to the cache,
	// which Anthropic bills apart (cache_creation_input_tokens); 0 for the
	// others.
	CacheWriteTokens int `json:"cacheWriteTokens,omitempty"`
	// ReasoningTokens is the part of CompletionTokens the model spent
	// reasoning, which it did not answer with (still counted in
	// CompletionTokens, as the providers bill it): OpenAI's
	// completion_tokens_details.reasoning_tokens or
	// output_tokens_details.reasoning_tokens, Gemini's
	// thoughtsTokenCount; 0 for Anthropic, which reports none apart.
	ReasoningTokens int `json:"reasoningTokens,omitempty"`
}
