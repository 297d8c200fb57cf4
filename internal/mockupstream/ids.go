package mockupstream

import (
	"encoding/base64"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
)

const (
	alphaBase62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	alphaHex    = "0123456789abcdef"
)

// randomID returns prefix followed by n random characters of alphabet.
func randomID(prefix string, n int, alphabet string) string {
	b := make([]byte, len(prefix)+n)
	copy(b, prefix)
	base := uint64(len(alphabet))
	for i := len(prefix); i < len(b); {
		x := rand.Uint64()
		for j := 0; j < 10 && i < len(b); j++ {
			b[i] = alphabet[x%base]
			x /= base
			i++
		}
	}
	return string(b)
}

// Ids in the providers' own formats.
func chatCompletionID() string { return randomID("chatcmpl-", 29, alphaBase62) }
func openAICallID() string     { return randomID("call_", 24, alphaBase62) }
func openAIRequestID() string  { return randomID("req_", 32, alphaHex) }
func responseID() string       { return randomID("resp_", 50, alphaHex) }
func responseMsgID() string    { return randomID("msg_", 50, alphaHex) }
func functionCallID() string   { return randomID("fc_", 50, alphaHex) }
func reasoningID() string      { return randomID("rs_", 50, alphaHex) }
func anthropicMsgID() string   { return randomID("msg_01", 22, alphaBase62) }
func toolUseID() string        { return randomID("toolu_01", 22, alphaBase62) }
func anthropicReqID() string   { return randomID("req_011C", 20, alphaBase62) }
func geminiResponseID() string { return randomID("", 23, alphaBase62) }

// signature is an opaque thinking signature / encrypted reasoning blob.
func signature() string {
	var b [48]byte
	for i := 0; i < len(b); i += 8 {
		x := rand.Uint64()
		for j := range 8 {
			b[i+j] = byte(x >> (8 * j))
		}
	}
	return base64.StdEncoding.EncodeToString(b[:])
}

// fingerprint is a stable system_fingerprint per model.
func fingerprint(model string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(model))
	s := strconv.FormatUint(h.Sum64(), 16)
	for len(s) < 10 {
		s = "0" + s
	}
	return "fp_" + s[:10]
}

// bedrockRequestID is an x-amzn-RequestId: a UUID.
func bedrockRequestID() string {
	h := randomID("", 32, alphaHex)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
