#include "config/paths.hpp"

#include <unistd.h>

#include <filesystem>

#include "common/error.hpp"
#include "config/settings.hpp"

namespace loopr::config {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> non_empty(const EnvLookup& env, std::string_view name) {
  auto value = env(name);
  if (!value || value->empty()) return std::nullopt;
  return value;
}

// XDG variables must hold absolute paths; anything else is ignored.
std::optional<std::string> xdg(const EnvLookup& env, std::string_view name) {
  auto value = non_empty(env, name);
  if (!value || !fs::path(*value).is_absolute()) return std::nullopt;
  return value;
}

std::string normal(const fs::path& path) {
  std::string out = fs::absolute(path).lexically_normal().string();
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string home(const EnvLookup& env, std::string_view what, std::string_view override_hint) {
  auto value = non_empty(env, "HOME");
  if (!value) {
    throw StartupError("cannot find the " + std::string(what) + ": HOME is not set; set HOME or " +
                       std::string(override_hint));
  }
  return *value;
}

}  // namespace

std::string Paths::settings_file() const {
  return (fs::path(config_dir) / "loopr.toml").string();
}

std::string Paths::user_catalog_file() const {
  return (fs::path(config_dir) / "catalog.toml").string();
}

Paths resolve_paths(const PathFlags& flags, const EnvLookup& env, std::uint32_t uid,
                    const DaemonSettings* configured) {
  Paths paths;

  if (!flags.config_dir.empty()) {
    paths.config_dir = normal(flags.config_dir);
  } else if (auto v = non_empty(env, "LOOPR_CONFIG_DIR")) {
    paths.config_dir = normal(*v);
  } else if (auto x = xdg(env, "XDG_CONFIG_HOME")) {
    paths.config_dir = normal(fs::path(*x) / "loopr");
  } else {
    paths.config_dir = normal(fs::path(home(env, "configuration folder", "LOOPR_CONFIG_DIR")) /
                              ".config" / "loopr");
  }

  if (!flags.state_dir.empty()) {
    paths.state_dir = normal(flags.state_dir);
  } else if (auto v = non_empty(env, "LOOPR_STATE_DIR")) {
    paths.state_dir = normal(*v);
  } else if (configured != nullptr && !configured->state_dir.empty()) {
    paths.state_dir = normal(configured->state_dir);
  } else if (auto x = xdg(env, "XDG_STATE_HOME")) {
    paths.state_dir = normal(fs::path(*x) / "loopr");
  } else {
    paths.state_dir = normal(fs::path(home(env, "state folder", "LOOPR_STATE_DIR")) / ".local" /
                             "state" / "loopr");
  }

  if (!flags.socket_path.empty()) {
    paths.socket_path = normal(flags.socket_path);
  } else if (auto v = non_empty(env, "LOOPR_SOCKET")) {
    paths.socket_path = normal(*v);
  } else if (configured != nullptr && !configured->socket_path.empty()) {
    paths.socket_path = normal(configured->socket_path);
  } else if (auto x = xdg(env, "XDG_RUNTIME_DIR")) {
    paths.socket_path = normal(fs::path(*x) / "loopr" / "looprd.sock");
  } else {
    paths.socket_path = "/tmp/loopr-" + std::to_string(uid) + "/looprd.sock";
  }
  if (paths.socket_path.size() > kMaxSocketPathBytes) {
    throw StartupError("the control socket path " + paths.socket_path + " is " +
                       std::to_string(paths.socket_path.size()) +
                       " bytes long; a Unix socket path holds at most " +
                       std::to_string(kMaxSocketPathBytes) +
                       ": choose a shorter one with --socket or LOOPR_SOCKET");
  }
  return paths;
}

Paths resolve_paths(const PathFlags& flags, const DaemonSettings* configured) {
  return resolve_paths(flags, process_env(), static_cast<std::uint32_t>(::getuid()), configured);
}

std::string repository_catalog_file(const std::string& repo_dir) {
  if (repo_dir.empty()) return {};
  return (fs::path(repo_dir) / ".loopr" / "catalog.toml").lexically_normal().string();
}

}  // namespace loopr::config
