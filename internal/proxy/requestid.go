package proxy

// NewRequestID mints a request id as the proxy does ("req_" and 128
// random bits in hex), for the other inference-plane handlers (the MCP
// gateway) whose usage events need one.
func NewRequestID() string { return newRequestID() }
