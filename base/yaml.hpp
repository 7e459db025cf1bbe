// YAML parsed into picojson values, one per non-empty document. libyaml reads the text (UTF-8,
// or UTF-16 with a byte-order mark; LF, CRLF or CR line breaks) and parses it into events;
// yaml.cpp maps the events to values, because libyaml has no schema, no alias expansion and
// no limits on what aliases expand to:
// - plain scalars resolve as YAML 1.2's core schema (null, bool, int, float, else string);
//   quoted and block scalars are strings. Keys are the scalar's text.
// - tags: !!str, !!int, !!float, !!bool, !!null, !!map, !!seq and the non-specific "!"
//   resolve as YAML 1.2 says; any other tag (!!binary, !local, ...) is refused, since what it
//   means to the file's writer would be a guess.
// - an alias is a copy of its anchor's value; merge keys (<<: *a or <<: [*a, *b]) add the
//   keys the mapping does not set itself, earlier mappings in the list first.
// - refused: duplicate keys, collections or empty plain scalars as keys, .inf and .nan (JSON
//   has no such numbers), numbers out of range, nesting deeper than 200 levels, and more than
//   200,000 nodes or 16 MiB of scalar text in all (each use of an alias counts in full, so a
//   "billion laughs" document stops there; kMaxDepth, kMaxNodes and kMaxBytes below).
#pragma once
#include <picojson.h>

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.hpp"

namespace yaml_detail {
// The limits on what a stream may hold. Far above what kubeconfigs and manifests hold (a
// kubeconfig with a hundred clusters, users and contexts has a few thousand nodes), low enough
// that hostile input stays cheap.
constexpr size_t kMaxDepth = 200;
constexpr size_t kMaxNodes = 200000;
constexpr size_t kMaxBytes = 16 << 20;
}  // namespace yaml_detail

// Parses a YAML stream into one value per non-empty document, in order. On error returns
// kInvalid with a message "line L, column C: what is wrong" (1-based; "byte N: ..." for
// an encoding error in UTF-16 text), or kError when libyaml runs out of memory; never throws.
// Pure; thread-safe (each call has its own parser).
Result<std::vector<picojson::value>> ParseYamlDocuments(const std::string& text);
