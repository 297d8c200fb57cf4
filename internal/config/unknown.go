package config

import (
	"slices"
	"strings"
)

// elsewhere lists the RELAY_ variables Relay reads outside the settings table.
func elsewhere() []string {
	return []string{
		"RELAY_ADMIN_EMAIL", "RELAY_ADMIN_PASSWORD", // controlapi's bootstrap of the first admin
		"RELAY_NEW_MASTER_KEY",                       // relay rotate-master-key
		"RELAY_URL", "RELAY_EMAIL", "RELAY_PASSWORD", // the CLI (apply, export, keys, token)
	}
}

// notSettings are prefixes of variables that are not Relay's settings: tests'
// and benchmarks' own knobs, and the operator's secrets that env: host keys
// name (RELAY_SECRET_ENV_PREFIXES).
func notSettings() []string { return []string{"RELAY_TEST_", "RELAY_BENCH_", "RELAY_SECRET_"} }

// renamed maps names other gateways' (and older write-ups') configurations
// use to the setting that does the job here, where spelling alone does not
// lead to it.
func renamed() map[string]string {
	return map[string]string{
		"RELAY_STORAGE_DRIVER": "RELAY_DATABASE_URL",
		"RELAY_LISTEN_ADDR":    "RELAY_BIND_ADDRESS",
		"RELAY_HOST":           "RELAY_BIND_ADDRESS",
	}
}

// Unknown is a RELAY_ variable that Relay does not read, with the known name
// nearest to it ("" when none is near).
type Unknown struct {
	Name    string
	Nearest string
}

// UnknownVariables lists the RELAY_ variables of environ (os.Environ's
// NAME=value form) that Relay does not read — a misspelt or outdated name
// would otherwise be silently ignored — each with the nearest known name.
func UnknownVariables(environ []string) []Unknown {
	var known []string
	for _, s := range settings(&Config{}) {
		known = append(known, s.env)
	}
	known = append(known, elsewhere()...)
	ren := renamed()
	var out []Unknown
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "RELAY_") || slices.Contains(known, name) ||
			slices.ContainsFunc(notSettings(), func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		near, ok := ren[name]
		if !ok {
			near = nearest(name, known)
		}
		out = append(out, Unknown{Name: name, Nearest: near})
	}
	return out
}

// nearest is the known name closest to name: the fewest edits between the
// words after RELAY_ (RELAY_REDIS_ADDR → RELAY_REDIS_URL), then the fewest
// character edits; "" when nothing shares a word or is a few characters off.
func nearest(name string, known []string) string {
	best, bestWords, bestChars := "", 0, 0
	for _, k := range known {
		w := distance(words(name), words(k))
		c := distance([]rune(name), []rune(k))
		shared := len(words(name)) - w // an upper bound on the words kept; 0 means none
		if shared <= 0 && c > 3 {
			continue
		}
		if best == "" || w < bestWords || w == bestWords && c < bestChars {
			best, bestWords, bestChars = k, w, c
		}
	}
	return best
}

func words(name string) []string {
	return strings.Split(strings.TrimPrefix(name, "RELAY_"), "_")
}

// distance is the Levenshtein distance between two sequences.
func distance[T comparable](a, b []T) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
