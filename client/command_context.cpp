#include <ostream>

#include "client/commands.hpp"
#include "client/text_format.hpp"

namespace loopr::client {

int CommandContext::fail(const Error& error) const {
  print_failure(err, error);
  return to_int(exit_status_for(error));
}

void CommandContext::print_json(const nlohmann::json& value) const {
  out << pretty_json(value) << '\n';
}

Result<ControlClient> CommandContext::open() const {
  return ControlClient::open(paths.socket_path, timeouts);
}

}  // namespace loopr::client

namespace loopr::client {

Result<nlohmann::json> objects_in(const nlohmann::json& result, const char* key,
                                  const std::string& method, bool required) {
  const auto problem = [&](const std::string& what) {
    return make_error(errc::protocol, "the " + method + " result " + what);
  };
  if (!result.is_object())
    return problem(std::string("is ") + result.type_name() + ", not an object");
  const auto it = result.find(key);
  if (it == result.end() || it->is_null()) {
    if (required) return problem(std::string("has no '") + key + "'");
    return nlohmann::json::array();
  }
  if (!it->is_array()) return problem(std::string("'") + key + "' is not an array");
  for (const auto& item : *it) {
    if (!item.is_object()) return problem(std::string("'") + key + "' holds a non-object");
  }
  return *it;
}

}  // namespace loopr::client
