#include "loopr-tool/arguments.hpp"

namespace loopr::tool {
namespace {

std::string describe(const nlohmann::json& value) {
  std::string shown = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  return std::string(value.type_name()) + " " + shown;
}

}  // namespace

Result<Arguments> Arguments::parse(const nlohmann::json& args, std::string_view tool,
                                   std::initializer_list<std::string_view> accepted) {
  std::string accepted_list;
  for (std::string_view key : accepted) {
    if (!accepted_list.empty()) accepted_list += ", ";
    accepted_list += key;
  }
  if (!args.is_object()) {
    return make_error(
        errc::invalid_arguments,
        std::string(tool) + " takes a JSON object of arguments, got " + describe(args),
        "pass an object with the keys: " + accepted_list);
  }
  for (const auto& [key, value] : args.items()) {
    bool known = false;
    for (std::string_view name : accepted)
      known = known || name == key;
    if (!known) {
      return make_error(errc::invalid_arguments,
                        std::string(tool) + " has no argument '" + key + "'",
                        "accepted arguments: " + accepted_list);
    }
  }
  return Arguments(args, std::string(tool));
}

bool Arguments::has(std::string_view key) const {
  const auto it = args_->find(key);
  return it != args_->end() && !it->is_null();
}

const nlohmann::json& Arguments::raw(std::string_view key) const {
  static const nlohmann::json null_value;
  const auto it = args_->find(key);
  return it == args_->end() ? null_value : *it;
}

Error Arguments::wrong_type(std::string_view key, std::string_view expected) const {
  return make_error(errc::invalid_arguments,
                    tool_ + ": argument '" + std::string(key) + "' must be " +
                        std::string(expected) + ", got " + describe(raw(key)),
                    "fix '" + std::string(key) + "' and call " + tool_ + " again");
}

Result<std::string> Arguments::required_string(std::string_view key) const {
  if (!has(key)) {
    return make_error(errc::invalid_arguments,
                      tool_ + ": missing required argument '" + std::string(key) + "'",
                      "add '" + std::string(key) + "' (a string) and call " + tool_ + " again");
  }
  if (!raw(key).is_string()) return wrong_type(key, "a string");
  return raw(key).get<std::string>();
}

Result<std::string> Arguments::string_or(std::string_view key, std::string fallback) const {
  if (!has(key)) return fallback;
  if (!raw(key).is_string()) return wrong_type(key, "a string");
  return raw(key).get<std::string>();
}

Result<std::optional<std::string>> Arguments::optional_string(std::string_view key) const {
  if (!has(key)) return std::optional<std::string>();
  if (!raw(key).is_string()) return wrong_type(key, "a string");
  return std::optional<std::string>(raw(key).get<std::string>());
}

Result<std::int64_t> Arguments::integer_or(std::string_view key, std::int64_t fallback,
                                           std::int64_t min, std::int64_t max) const {
  const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  if (!has(key)) return fallback;
  const nlohmann::json& value = raw(key);
  std::int64_t number = 0;
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() &&
        value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      return wrong_type(key, range);
    }
    number = value.get<std::int64_t>();
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!(d >= -9.0e18 && d <= 9.0e18) || d != static_cast<double>(static_cast<std::int64_t>(d))) {
      return wrong_type(key, range);
    }
    number = static_cast<std::int64_t>(d);
  } else {
    return wrong_type(key, range);
  }
  if (number < min || number > max) return wrong_type(key, range);
  return number;
}

Result<bool> Arguments::boolean_or(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!raw(key).is_boolean()) return wrong_type(key, "true or false");
  return raw(key).get<bool>();
}

Result<std::string> Arguments::choice_or(std::string_view key, std::string fallback,
                                         std::initializer_list<std::string_view> choices) const {
  std::string listed;
  for (std::string_view choice : choices) {
    if (!listed.empty()) listed += ", ";
    listed += "\"" + std::string(choice) + "\"";
  }
  auto value = string_or(key, std::move(fallback));
  if (!value) return wrong_type(key, "one of " + listed);
  for (std::string_view choice : choices) {
    if (*value == choice) return value;
  }
  return wrong_type(key, "one of " + listed);
}

}  // namespace loopr::tool
