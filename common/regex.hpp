// Regular expressions written by people (a catalog's JSON Schema `pattern`,
// approval rules' args_match) and searched in text a model wrote: PCRE2,
// compiled once, searched under fixed match, depth and heap limits, so a
// pattern with catastrophic backtracking gives up instead of stalling the
// caller. A compiled Regex is immutable and may be searched from any thread
// (each thread keeps its own match scratch); copies share the compiled code.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace loopr {

enum class RegexSyntax {
  pcre,        // PCRE2 as it is, UTF mode
  ecmascript,  // JSON Schema's ECMA-262-ish flavour: `$` only at the very end,
               // \uHHHH and \u{H...}, CR/LF/CRLF newlines
};

enum class RegexMatch { match, no_match, gave_up };  // gave_up: a limit, or out of memory

class Regex {
 public:
  // Unanchored. A pattern PCRE2 refuses is an invalid_arguments Error "at
  // offset N: <PCRE2's message>".
  static Result<Regex> compile(std::string_view source, RegexSyntax syntax = RegexSyntax::pcre);

  // Whether `subject` matches anywhere.
  RegexMatch search(std::string_view subject) const;

  const std::string& source() const { return source_; }

 private:
  Regex() = default;

  std::shared_ptr<void> code_;  // a pcre2_code, freed with pcre2_code_free
  std::string source_;
};

}  // namespace loopr
