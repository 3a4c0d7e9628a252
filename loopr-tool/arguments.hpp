// Arguments: typed, strict access to a tool's JSON arguments. Every failure is
// an invalid_arguments Error that names the field and says what it must be,
// so a model can correct its call. Unknown keys are refused (they are usually
// a misspelt argument that would otherwise be ignored silently).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace loopr::tool {

class Arguments {
 public:
  // `args` must be a JSON object whose keys are all in `accepted`.
  static Result<Arguments> parse(const nlohmann::json& args, std::string_view tool,
                                 std::initializer_list<std::string_view> accepted);

  bool has(std::string_view key) const;
  const nlohmann::json& raw(std::string_view key) const;

  Result<std::string> required_string(std::string_view key) const;
  Result<std::string> string_or(std::string_view key, std::string fallback) const;
  Result<std::optional<std::string>> optional_string(std::string_view key) const;
  // An integer in [min, max]; a JSON number with a fractional part is refused.
  Result<std::int64_t> integer_or(std::string_view key, std::int64_t fallback, std::int64_t min,
                                  std::int64_t max) const;
  Result<bool> boolean_or(std::string_view key, bool fallback) const;
  // One of `choices`.
  Result<std::string> choice_or(std::string_view key, std::string fallback,
                                std::initializer_list<std::string_view> choices) const;

 private:
  Arguments(const nlohmann::json& args, std::string tool) : args_(&args), tool_(std::move(tool)) {}
  Error wrong_type(std::string_view key, std::string_view expected) const;

  const nlohmann::json* args_;  // not owned: outlives the Arguments
  std::string tool_;
};

}  // namespace loopr::tool
