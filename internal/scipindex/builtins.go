package scipindex

// builtinMethods are the methods of Python's and JavaScript's built-in
// types (dict, list, str, set, files; Object, Array, String, Map, Set,
// Promise, RegExp, streams) that a call on a receiver of unknown type most
// often is. A call site the index resolves nothing at whose name is one of
// these is not left to the lexical rule: an indexer that cannot type the
// receiver resolves nothing there, and the rule would link
// `params.get(...)` on a dict to a project's own `get` (17 of oauthlib's 82
// false edges; docs/accuracy.md has the figures with and without).
var builtinMethods = map[bool]map[string]bool{
	false: set( // Python
		"get", "keys", "values", "items", "pop", "popitem", "update", "setdefault", "copy", "clear", "fromkeys",
		"append", "extend", "insert", "remove", "index", "count", "sort", "reverse",
		"split", "rsplit", "join", "strip", "lstrip", "rstrip", "replace", "format", "startswith", "endswith",
		"lower", "upper", "encode", "decode", "find", "rfind", "splitlines", "partition", "rpartition",
		"add", "discard", "union", "intersection", "difference",
		"read", "write", "close", "readline", "readlines", "flush",
	),
	true: set( // JavaScript, TypeScript
		"trim", "toLowerCase", "toUpperCase", "split", "join", "map", "filter", "forEach", "reduce", "push", "pop",
		"shift", "unshift", "slice", "splice", "concat", "indexOf", "includes", "find", "findIndex", "some", "every",
		"keys", "values", "entries", "get", "set", "has", "delete", "add", "clear", "replace", "startsWith",
		"endsWith", "match", "test", "exec", "toString", "write", "then", "catch", "finally", "apply", "call",
		"bind", "hasOwnProperty", "charAt", "padStart", "padEnd", "repeat", "sort", "reverse", "fill", "trimStart",
		"trimEnd", "flat", "flatMap", "at", "end", "emit", "on",
	),
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
