// looprctl repo trust | untrust | show.
#include "client/repo_commands.hpp"

#include <functional>
#include <ostream>

#include "client/client_paths.hpp"
#include "client/text_format.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

std::string text_of(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? printable(it->get<std::string>()) : std::string();
}

// A setting's value as one line: a list joined with ", "; "(none)" when empty.
std::string value_text(const json& value) {
  std::string out;
  if (value.is_array()) {
    for (const json& item : value) {
      if (!item.is_string()) continue;
      out += (out.empty() ? "" : ", ") + printable(item.get<std::string>());
    }
  } else if (value.is_string()) {
    out = printable(value.get<std::string>());
  }
  return out.empty() ? "(none)" : out;
}

std::string short_hash(const std::string& hash) {
  return hash.size() > 19 ? hash.substr(0, 19) + "…" : hash;
}

Result<json> call_repo(const CommandContext& context, const std::string& method,
                       const std::string& dir) {
  auto folder = absolute_folder(dir, "the repository", "DIR");
  if (!folder) return std::move(folder).error();
  auto client = context.open();
  if (!client) return std::move(client).error();
  auto result = client->call(method, proto::to_json(proto::RepoParams{*folder}));
  if (!result) return result;
  if (!result->is_object()) {
    return make_error(errc::protocol, "the " + method + " result is not an object");
  }
  return result;
}

}  // namespace

void print_repo_settings(const json& shown, std::ostream& out) {
  const std::string repo = text_of(shown, "repo");
  const json file = shown.value("file", json::object());
  const std::string state = text_of(file, "state");
  out << "repository  " << repo << '\n';
  out << "file        " << text_of(file, "path") << '\n';
  const json trust = shown.value("trust", json());
  const std::string trusted_hash = text_of(trust, "file_hash");
  if (state == "none") {
    out << "            none: the daemon's [commands] and [worktrees] and your own "
           "[[repositories]] entry apply\n";
  } else if (state == "trusted") {
    out << "            trusted (" << short_hash(text_of(file, "hash")) << ")\n";
  } else if (state == "untrusted") {
    out << "            untrusted: not honoured until you run `looprctl repo trust " << repo
        << "`\n";
  } else if (state == "changed") {
    out << "            changed since you trusted it (trusted " << short_hash(trusted_hash)
        << ", now " << short_hash(text_of(file, "hash"))
        << "): not honoured until you trust it again\n";
  } else if (state == "invalid") {
    out << "            invalid: " << printable_lines(file.value("error", std::string())) << '\n';
  }
  out << "settings (value, then where it came from):\n";
  for (const json& setting : shown.value("settings", json::array())) {
    std::string key = text_of(setting, "key");
    if (key.starts_with("commands.")) key = "[commands] " + key.substr(9);
    if (key.starts_with("worktrees.")) key = "[worktrees] " + key.substr(10);
    std::string value = value_text(setting.value("value", json()));
    out << "  " << key << std::string(key.size() < 24 ? 24 - key.size() : 1, ' ') << value << "  ("
        << text_of(setting, "source") << ")\n";
  }
  const json refusal = shown.value("refusal", json());
  if (refusal.is_object()) {
    out << "refused: " << printable_lines(refusal.value("message", std::string())) << '\n';
    const std::string hint = text_of(refusal, "hint");
    if (!hint.empty()) out << "  " << hint << '\n';
  }
}

namespace {

// Calls `method` for `dir`; prints the JSON result with --json, else the
// line `head` makes of it (none when empty) and the settings.
int run_repo_method(const CommandContext& context, const std::string& method,
                    const std::string& dir, const std::function<std::string(const json&)>& head) {
  auto result = call_repo(context, method, dir);
  if (!result) return context.fail(result.error());
  if (context.json) {
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  if (head) context.out << head(*result) << '\n';
  print_repo_settings(*result, context.out);
  return to_int(ExitStatus::ok);
}

}  // namespace

int run_repo_trust(const CommandContext& context, const std::string& dir) {
  return run_repo_method(context, "repo.trust", dir, [](const json& result) {
    const json file = result.value("file", json::object());
    return "trusted " + text_of(file, "path") + " (" + short_hash(text_of(file, "hash")) +
           "); a change to it is not honoured until you trust it again";
  });
}

int run_repo_untrust(const CommandContext& context, const std::string& dir) {
  return run_repo_method(context, "repo.untrust", dir, [](const json& result) {
    const std::string repo = text_of(result, "repo");
    return result.value("untrusted", false)
               ? "no longer trusted: " + repo + " (its .loopr/loopr.toml is not honoured)"
               : repo + " was not trusted";
  });
}

int run_repo_show(const CommandContext& context, const std::string& dir) {
  return run_repo_method(context, "repo.show", dir, nullptr);
}

}  // namespace loopr::client
