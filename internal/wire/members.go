package wire

// A member Relay reads is found by what its name decodes to, as the
// upstream's decoder finds it, never by its raw bytes: "max\u004futputTokens"
// is maxOutputTokens. Gemini's decoder (protobuf's JSON mapping) takes a
// field under its lowerCamelCase name and under its proto name
// (generationConfig and generation_config are one field), and decoders
// written in Go fold case. So a member has spellings, and one that
// appears twice — under one spelling or two, or under a case-folded one —
// is refused: Relay could decide on one value while the upstream acts on
// the other.

// spelling is one name a member goes by: id says which member. The first
// spelling of an id is the one a refusal names.
type spelling struct {
	name string
	id   int
}

// noSpan marks a member findMembers did not find.
var noSpan = [2]int{-1, -1}

// findMembers walks the object that starts at obj[at] and records in
// spans[id] the value span of each member one of names spells; spans must
// hold noSpan for every id on entry. A member found twice (under any of its
// spellings) or under a case-folded spelling is refused, the refusal
// naming prefix and the member's first spelling. It returns the index just
// past the object, and an error when the object is malformed (the refusal
// is then nil). It does not allocate unless it refuses.
func findMembers(obj []byte, at, depth int, prefix string, names []spelling, spans [][2]int) (end int, refused *Error, syntax error) {
	end, syntax = eachMember(obj, at, depth, func(key []byte, s, e int) bool {
		id, folded := spelledBy(key, names)
		if id < 0 {
			return true
		}
		if dup := spans[id][0] >= 0; refused == nil && (folded || dup) {
			refused = checkMember(key, prefix+firstSpelling(names, id), folded, dup)
		}
		spans[id] = [2]int{s, e}
		return true
	})
	if syntax != nil {
		return end, nil, syntax
	}
	return end, refused, nil
}

// spelledBy returns the id of the member a raw key spells, or -1; folded
// is set when the key spells it only when case is ignored.
func spelledBy(key []byte, names []spelling) (id int, folded bool) {
	for _, n := range names {
		if string(key) == n.name {
			return n.id, false
		}
	}
	plain := plainKey(key)
	for _, n := range names {
		if len(key) < len(n.name) || (plain && lowerASCII(n.name)) {
			continue // cannot decode to it, or only byte for byte
		}
		if exact, f := matchKey(key, n.name); exact || f {
			return n.id, f
		}
	}
	return -1, false
}

// firstSpelling is the name a refusal gives member id.
func firstSpelling(names []spelling, id int) string {
	for _, n := range names {
		if n.id == id {
			return n.name
		}
	}
	return ""
}

// lowerASCII reports whether name has no upper-case letter, so that a key
// plainKey accepts can match it only byte for byte.
func lowerASCII(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] >= 'A' && name[i] <= 'Z' {
			return false
		}
	}
	return true
}

// keyIs reports whether a raw key decodes to name, or to it with case
// folded: for members whose presence only makes Relay more careful (an
// image part), where counting a folded spelling is the safe side.
func keyIs(key []byte, name string) bool {
	if string(key) == name {
		return true
	}
	if len(key) < len(name) || (plainKey(key) && lowerASCII(name)) {
		return false
	}
	exact, folded := matchKey(key, name)
	return exact || folded
}

// uniqueMember returns the value of the member of the object at obj[0]
// that names spell (all spellings of one member, id 0), refusing a
// duplicate as findMembers does; nil when it is absent or obj is not an
// object.
func uniqueMember(obj []byte, depth int, prefix string, names []spelling) ([]byte, *Error) {
	if len(obj) == 0 || obj[0] != '{' {
		return nil, nil
	}
	spans := [1][2]int{noSpan}
	if _, err, _ := findMembers(obj, 0, depth, prefix, names, spans[:]); err != nil {
		return nil, err
	}
	if spans[0][0] < 0 {
		return nil, nil
	}
	return obj[spans[0][0]:spans[0][1]], nil
}

// stringIs reports whether the JSON value v is a string that decodes to
// one of names (escapes undone, case kept, as every decoder compares
// values). It does not allocate.
func stringIs(v []byte, names ...string) bool {
	raw, ok := Str(v)
	if !ok {
		return false
	}
	for _, n := range names {
		if exact, _ := matchKey(raw, n); exact {
			return true
		}
	}
	return false
}
