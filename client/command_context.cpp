#include <chrono>
#include <ostream>

#include "client/commands.hpp"
#include "client/text_format.hpp"

namespace loopr::client {

int CommandContext::fail(const Error& error) const {
  print_failure(err, error);
  return to_int(exit_status_for(error));
}

int CommandContext::fail_outcome(const Error& error) const {
  print_failure(err, error);
  return to_int(exit_status_for(error) == ExitStatus::usage ? ExitStatus::usage
                                                            : ExitStatus::call_failed);
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

Result<nlohmann::json> object_in(const nlohmann::json& result, const char* key,
                                 const std::string& method) {
  if (!result.is_object() || !result.contains(key) || !result[key].is_object()) {
    return make_error(errc::protocol,
                      "the " + method + " result has no '" + std::string(key) + "' object");
  }
  return result[key];
}

Result<nlohmann::json> subscribe_events(ControlClient& client, std::vector<std::string> topics,
                                        const std::optional<std::string>& loop_id) {
  auto subscribed =
      client.call<proto::methods::EventsSubscribe>({std::move(topics), loop_id, false});
  if (!subscribed) return subscribed;
  if (!subscribed->is_object()) {
    return make_error(errc::protocol, "the events.subscribe result is not an object");
  }
  return subscribed;
}

bool blank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace loopr::client
