// GlobPattern: a compiled gitignore-style / shell glob matched against
// '/'-separated relative paths ("src/a.cpp", never a leading "/" or "./").
// The glob and grep tools and .gitignore reading (loopr-tool/) match with it,
// and so do a loop's [validation] protected_paths (loops/), so one pattern
// means the same wherever loopr takes one.
//
// Syntax: `*` (any run of characters except '/'), `?` (one character except
// '/'), `[abc]` `[a-z]` `[!x]` `[^x]` (one character; ']' first is literal),
// `\x` (x literally), `**` as a whole component (zero or more components:
// `**/x`, `a/**/b`; a trailing `a/**` needs at least one component below a),
// `{a,b}` alternation (nested allowed; expanded at compile time). A `**`
// inside a component (`a**b`) is an ordinary `*`. Characters are UTF-8 code
// points; invalid bytes count as one character each. Case-sensitive.
//
// Cost: compile once; match() is O(path length x pattern length) at worst
// (the greedy-star algorithm with one backtrack point per level, both for
// `*` within a component and for `**` across components), so hostile
// patterns like `*a*a*a*b` cannot backtrack exponentially.
//
// Thread-safety: a compiled pattern is immutable; match() may be called from
// several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace loopr {

class GlobPattern {
 public:
  // At most this many alternatives after `{}` expansion; more is an error.
  static constexpr std::size_t kMaxAlternatives = 1024;
  // Longest accepted pattern, in bytes.
  static constexpr std::size_t kMaxPatternBytes = 4096;

  // Errors (invalid_arguments): empty pattern, too long, unbalanced `{`/`}`,
  // too many alternatives. An unclosed `[` is taken literally (as git does).
  // With alternation off (gitignore syntax), `{` and `}` are ordinary.
  static Result<GlobPattern> compile(std::string_view pattern, bool alternation = true);

  bool match(std::string_view path) const;

  const std::string& source() const { return source_; }
  // True if the pattern has no metacharacters (matches exactly one path).
  bool is_literal() const { return literal_; }

  struct CharRange {
    std::uint32_t low;
    std::uint32_t high;
  };
  struct Token {
    enum class Kind : std::uint8_t { literal, any_char, star, char_class };
    Kind kind;
    bool negated = false;           // char_class only
    std::string text;               // literal only: bytes to compare
    std::vector<CharRange> ranges;  // char_class only
  };
  // One path component's pattern, or `**` (globstar).
  struct Segment {
    bool globstar = false;
    bool literal = true;  // only literal tokens
    std::vector<Token> tokens;
  };
  using Alternative = std::vector<Segment>;

 private:
  GlobPattern() = default;

  std::string source_;
  std::vector<Alternative> alternatives_;
  bool literal_ = false;
};

}  // namespace loopr
