package mockupstream

import (
	"slices"
	"strings"
	"unicode"
)

// askedFor are the words of a user turn that ask for some tool, whichever.
var askedFor = []string{"tool", "function", "command"}

// generic are name parts too common to name a tool by themselves.
var generic = []string{"tool", "function", "command", "file", "text", "content", "data", "input", "output"}

// readOnly are name parts of tools that only look, best first: an agent
// may call them without asking the user, and calling one by mistake
// changes nothing.
var readOnly = []string{"read", "glob", "grep", "ls", "list", "search", "find", "view", "get", "fetch", "lookup", "cat", "stat"}

// shellWords in a user turn ask for a shell tool: one with a shellParts
// part (Bash, shell, exec_command, run_shell_command).
var (
	shellWords = []string{"shell", "bash", "terminal", "command"}
	shellParts = []string{"shell", "bash", "terminal", "exec"}
)

// launchers are name parts of tools that start another agent: calling one
// on a guess makes an agent recurse, so only a turn that names it gets it.
var launchers = []string{"agent", "task"}

// askedTools returns the tools the last user turn asks for, best first:
// those it names — the whole name, a distinctive part of four letters or
// more ("weather" names get_weather), or a shell tool by "shell" or
// "command" —, else, when it asks for a tool at all, every tool but the
// launchers (must: as if it had). Read-only tools go first either way.
// Empty: answer with text.
// Text inside <system-reminder> tags (which Claude Code adds to user
// turns) is the client's, not the user's, and is not read.
func (c *convo) askedTools(must bool) []toolDef {
	words := wordSet(stripReminders(c.userText))
	shell := false
	for _, w := range shellWords {
		shell = shell || words[w]
	}
	// named[0]: named whole, or a shell tool asked for by "shell" or
	// "command"; named[1]: named by a part. The first tier that has any
	// wins: "list the files with a shell command" means the shell tool.
	var named [2][]toolDef
	var others []toolDef
	for _, t := range c.tools {
		if len(c.allowed) > 0 && !contains(c.allowed, t.name) {
			continue
		}
		parts := nameParts(t.name)
		switch {
		case words[strings.ToLower(t.name)] || (shell && anyIn(parts, shellParts)):
			named[0] = append(named[0], t)
		case names(parts, words):
			named[1] = append(named[1], t)
		case anyIn(parts, launchers):
		default:
			others = append(others, t)
		}
	}
	asked := named[0]
	if len(asked) == 0 {
		asked = named[1]
	}
	if len(asked) == 0 {
		if must {
			asked = others
		}
		for _, w := range askedFor {
			if words[w] {
				asked = others
			}
		}
	}
	slices.SortStableFunc(asked, func(a, b toolDef) int { return lookRank(a.name) - lookRank(b.name) })
	return asked
}

// lookRank orders read-only tools first, the surest lookers first.
func lookRank(name string) int {
	best := len(readOnly)
	for _, p := range nameParts(name) {
		if i := slices.Index(readOnly, p); i >= 0 && i < best {
			best = i
		}
	}
	return best
}

// names reports whether a distinctive part (four letters or more, not
// generic) is one of words.
func names(parts []string, words map[string]bool) bool {
	for _, p := range parts {
		if len(p) >= 4 && words[p] && !contains(generic, p) {
			return true
		}
	}
	return false
}

func anyIn(parts, list []string) bool {
	for _, p := range parts {
		if contains(list, p) {
			return true
		}
	}
	return false
}

// stripReminders removes <system-reminder>…</system-reminder> spans.
func stripReminders(s string) string {
	for _, tag := range clientTags {
		s = stripTag(s, tag)
	}
	return s
}

// clientTags wrap what clients add to user turns: Claude Code's system
// reminders, Codex's environment context (its shell, working directory).
var clientTags = []string{"system-reminder", "environment_context"}

// stripTag removes every <tag>…</tag> from s, and an unclosed one to the
// end.
func stripTag(s, tag string) string {
	open, end := "<"+tag+">", "</"+tag+">"
	for {
		i := strings.Index(s, open)
		if i < 0 {
			return s
		}
		j := strings.Index(s[i:], end)
		if j < 0 {
			return s[:i]
		}
		s = s[:i] + " " + s[i+j+len(end):]
	}
}

// wordSet is the lower-cased words (letters, digits, '_') of s.
func wordSet(s string) map[string]bool {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	}) {
		words[w] = true
		words[strings.TrimSuffix(w, "s")] = true
	}
	return words
}

// nameParts splits a tool name at '_', '-', '.' and lower-to-upper case
// changes, lower-cased: "WebFetch" → web, fetch; "list_directory" → list,
// directory.
func nameParts(name string) []string {
	var parts []string
	var cur strings.Builder
	prevLower := false
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
			if cur.Len() > 0 {
				parts = append(parts, cur.String())
				cur.Reset()
			}
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			parts = append(parts, cur.String())
			cur.Reset()
		}
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		cur.WriteRune(unicode.ToLower(r))
	}
	if cur.Len() > 0 {
		parts = append(parts, cur.String())
	}
	return parts
}
