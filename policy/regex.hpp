// Regular expressions that users write in their settings (approval rules'
// args_match): PCRE2, compiled once when the settings are loaded and
// searched under fixed match, depth and heap limits, so a pattern with
// catastrophic backtracking gives up instead of stalling looprd.
// A compiled Regex is immutable and may be searched from any thread (each
// thread keeps its own match scratch); copies share the compiled code.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace loopr::policy {

class Regex {
 public:
  // PCRE2 in UTF mode, unanchored. A pattern PCRE2 refuses is an
  // invalid_arguments Error "at offset N: <PCRE2's message>".
  static Result<Regex> compile(std::string_view source);

  // Whether `subject` matches anywhere; nullopt when PCRE2 gave up (a limit
  // reached, or out of memory).
  std::optional<bool> search(std::string_view subject) const;

  const std::string& source() const { return source_; }

 private:
  Regex() = default;

  std::shared_ptr<void> code_;  // a pcre2_code, freed with pcre2_code_free
  std::string source_;
};

}  // namespace loopr::policy
