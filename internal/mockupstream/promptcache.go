package mockupstream

import (
	"hash/fnv"
	"sync"
)

// promptBlock is the granularity of the mock's prompt cache, in body bytes:
// about 128 tokens, the block size providers cache prompt prefixes in.
const promptBlock = 512

// maxCachedPrefixes bounds what the cache remembers per credential; past it
// the credential's memory starts afresh, as a provider's cache expires.
const maxCachedPrefixes = 1 << 16

// promptCache is the per-credential prompt cache of Options.PromptCache: it
// remembers every whole-block prefix of the request bodies each credential
// sent, so a later body that starts the same way on the same credential
// reads those blocks "from the cache". Another credential starts cold, as a
// provider's cache is per account (and, in practice, per key's shard).
type promptCache struct {
	mu   sync.Mutex // guards seen
	seen map[string]map[uint64]struct{}
}

func newPromptCache() *promptCache {
	return &promptCache{seen: map[string]map[uint64]struct{}{}}
}

// read returns how many leading bytes of body the credential has sent
// before (a multiple of promptBlock), and remembers body's prefixes.
func (p *promptCache) read(cred string, body []byte) int {
	n := len(body) / promptBlock
	if n == 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.seen[cred]
	if seen == nil || len(seen) > maxCachedPrefixes {
		seen = make(map[uint64]struct{})
		p.seen[cred] = seen
	}
	h := fnv.New64a()
	cached, hit := 0, true
	for i := range n {
		_, _ = h.Write(body[i*promptBlock : (i+1)*promptBlock])
		sum := h.Sum64()
		if _, ok := seen[sum]; ok && hit {
			cached = (i + 1) * promptBlock
			continue
		}
		hit = false
		seen[sum] = struct{}{}
	}
	return cached
}

// cachedTokens is the share of the prompt's tokens that the cached bytes
// of a body of size bytes make up.
func cachedTokens(prompt, cachedBytes, size int) int {
	if cachedBytes <= 0 || size <= 0 {
		return 0
	}
	return min(prompt, prompt*cachedBytes/size)
}
