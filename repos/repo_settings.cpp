#include "repos/repo_settings.hpp"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "memory/repository.hpp"

namespace loopr::repos {

namespace {

using nlohmann::json;

std::string canonical_or_same(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

std::string short_hash(const std::string& hash) {
  return hash.size() > 19 ? hash.substr(0, 19) : hash;  // "sha256:" + 12 digits
}

// One key: the user's config, else the file when honoured, else the daemon's.
template <class T>
void pick(EffectiveRepoSettings& out, const char* key,
          std::optional<T> config::RepoSettings::*field, const config::RepoSettings* user,
          bool honoured, const T& daemon, T& target) {
  const std::optional<T>* from_file = out.file.settings ? &((*out.file.settings).*field) : nullptr;
  if (user != nullptr && (user->*field)) {
    target = *(user->*field);
    out.sources[key] = Source::user_config;
    return;
  }
  if (from_file != nullptr && *from_file && honoured) {
    target = **from_file;
    out.sources[key] = Source::repository_file;
    return;
  }
  target = daemon;
  out.sources[key] = Source::daemon_default;
  // A file that would decide this key but is not honoured; an invalid file
  // might set anything.
  if ((from_file != nullptr && *from_file && !honoured) || out.state == FileState::invalid) {
    out.unhonoured_keys.push_back(key);
  }
}

}  // namespace

std::string_view to_string(Source source) {
  switch (source) {
    case Source::user_config:
      return "user config";
    case Source::repository_file:
      return "repository file";
    case Source::daemon_default:
      return "daemon default";
  }
  return "daemon default";
}

std::string_view to_string(FileState state) {
  switch (state) {
    case FileState::none:
      return "none";
    case FileState::trusted:
      return "trusted";
    case FileState::untrusted:
      return "untrusted";
    case FileState::changed:
      return "changed";
    case FileState::invalid:
      return "invalid";
  }
  return "none";
}

Result<std::string> repository_of(const std::string& dir) {
  if (dir.empty() || dir.front() != '/') {
    return make_error(errc::invalid_arguments,
                      "the repository must be an absolute path, got '" + dir.substr(0, 200) + "'",
                      "pass the repository's folder, e.g. /home/me/src/app");
  }
  char resolved[PATH_MAX];
  struct stat info {};
  if (::realpath(dir.c_str(), resolved) == nullptr || ::stat(resolved, &info) != 0 ||
      !S_ISDIR(info.st_mode)) {
    return make_error(errc::not_found, "'" + dir.substr(0, 200) + "' is not a folder",
                      "pass the folder of a git repository");
  }
  return memory::repository_of(resolved);
}

Result<EffectiveRepoSettings> resolve(const config::Settings& settings, const store::Store& store,
                                      const std::string& repo) {
  EffectiveRepoSettings out;
  out.repo = repo;
  out.file = read_repo_file(repo);
  auto trust = store.find_repo_trust(repo);
  if (!trust) return std::move(trust).error();
  out.trust = *trust;
  if (!out.file.exists) {
    out.state = FileState::none;
  } else if (!out.file.error.empty() || !out.file.settings) {
    out.state = FileState::invalid;
  } else if (!out.trust) {
    out.state = FileState::untrusted;
  } else if (out.trust->file_hash != out.file.hash) {
    out.state = FileState::changed;
  } else {
    out.state = FileState::trusted;
  }
  const bool honoured = out.state == FileState::trusted;

  const config::RepoSettings* user = nullptr;
  for (const config::RepositoryEntry& entry : settings.repositories) {
    if (entry.path == repo || canonical_or_same(entry.path) == repo) {
      user = &entry.settings;
      break;
    }
  }
  const config::CommandSettings& daemon = settings.commands;
  const config::WorktreePrep& daemon_prep = settings.worktrees.prep;
  using R = config::RepoSettings;
  pick(out, "commands.build", &R::build, user, honoured, daemon.build, out.commands.build);
  pick(out, "commands.test", &R::test, user, honoured, daemon.test, out.commands.test);
  pick(out, "commands.validate", &R::validate, user, honoured, daemon.validate,
       out.commands.validate);
  pick(out, "commands.lint", &R::lint, user, honoured, daemon.lint, out.commands.lint);
  pick(out, "commands.lint_files", &R::lint_files, user, honoured, daemon.lint_files,
       out.commands.lint_files);
  pick(out, "worktrees.include", &R::include, user, honoured, daemon_prep.include,
       out.prep.include);
  pick(out, "worktrees.setup", &R::setup, user, honoured, daemon_prep.setup, out.prep.setup);
  // Protected paths and rules add to the user's rather than replace them,
  // so the user's config never shadows the file's.
  out.protected_paths = settings.validation.protected_paths;
  if (out.file.settings && !out.file.settings->protected_paths.empty()) {
    if (honoured) {
      for (const std::string& pattern : out.file.settings->protected_paths) {
        if (std::find(out.protected_paths.begin(), out.protected_paths.end(), pattern) ==
            out.protected_paths.end()) {
          out.protected_paths.push_back(pattern);
        }
      }
    } else {
      out.unhonoured_keys.push_back("validation.protected_paths");
    }
  }
  if (out.file.settings && !out.file.settings->rules.empty()) {
    if (honoured) {
      out.rules = out.file.settings->rules;
    } else {
      out.unhonoured_keys.push_back("approval.rules");
    }
  }
  return out;
}

std::optional<Error> EffectiveRepoSettings::refusal_for(std::string_view key) const {
  if (std::find(unhonoured_keys.begin(), unhonoured_keys.end(), key) == unhonoured_keys.end()) {
    return std::nullopt;
  }
  return refusal();
}

std::optional<Error> EffectiveRepoSettings::refusal() const {
  if (unhonoured_keys.empty()) return std::nullopt;
  const std::string trust_command = "looprctl repo trust " + repo;
  Error error;
  error.code = kRefusedCode;
  std::string keys;
  for (const std::string& key : unhonoured_keys)
    keys += (keys.empty() ? "" : ", ") + key;
  switch (state) {
    case FileState::untrusted:
      error.message = file.path + " sets " + keys +
                      " for this repository, but you have not trusted it: loopr honours a "
                      "repository's own settings only once you do";
      error.hint = "read the file, then run `" + trust_command +
                   "`; or set these keys for it in your own loopr.toml ([[repositories]] path = "
                   "\"" +
                   repo + "\"), or remove the file";
      break;
    case FileState::changed:
      error.message = file.path + " changed since you trusted it (trusted " +
                      short_hash(trust ? trust->file_hash : std::string()) + "…, now " +
                      short_hash(file.hash) +
                      "…): it is not honoured until you trust it again (it sets " + keys + ")";
      error.hint = "review the change (git -C " + repo +
                   " log -p -- .loopr/loopr.toml), then run `" + trust_command + "`";
      break;
    default:
      error.message = file.path + " cannot be used: " + file.error;
      error.hint =
          "fix or remove the file: a repository may set only [commands] (build, test, validate, "
          "lint, lint_files), [worktrees] (include, setup), [validation] protected_paths and "
          "[[approval.rules]] that ask or "
          "deny; your own loopr.toml can set the "
          "same for it ([[repositories]] path = \"" +
          repo + "\")";
      break;
  }
  error.details = {{"repo", repo}, {"file", file.path}, {"state", to_string(state)}};
  return error;
}

json EffectiveRepoSettings::to_json() const {
  json settings_list = json::array();
  auto add = [&](const char* key, const json& value) {
    const auto it = sources.find(key);
    settings_list.push_back(
        {{"key", key},
         {"value", value},
         {"source", it == sources.end() ? "daemon default" : std::string(to_string(it->second))}});
  };
  add("commands.build", commands.build);
  add("commands.test", commands.test);
  add("commands.validate", commands.validate);
  add("commands.lint", commands.lint);
  add("commands.lint_files", commands.lint_files);
  add("worktrees.include", prep.include);
  add("worktrees.setup", prep.setup);
  json out = {{"repo", repo},
              {"file",
               {{"path", file.path},
                {"exists", file.exists},
                {"state", to_string(state)},
                {"hash", file.hash.empty() ? json(nullptr) : json(file.hash)}}},
              {"trust", nullptr},
              {"settings", std::move(settings_list)},
              {"unhonoured_keys", unhonoured_keys},
              {"refusal", nullptr}};
  if (!file.error.empty()) out["file"]["error"] = file.error;
  if (trust) {
    out["trust"] = {{"file_hash", trust->file_hash}, {"trusted_at_ms", trust->trusted_at_ms}};
  }
  if (auto refused = refusal()) out["refusal"] = refused->to_json();
  json rule_list = json::array();
  for (const policy::CommandRule& rule : rules)
    rule_list.push_back(rule.to_json());
  out["rules"] = std::move(rule_list);
  out["protected_paths"] = protected_paths;
  return out;
}

Result<store::RepoTrust> trust(store::Store& store, const std::string& repo) {
  const RepoFile file = read_repo_file(repo);
  if (!file.exists) {
    return make_error(errc::not_found,
                      repo + " has no .loopr/loopr.toml: there is nothing to trust",
                      "write the repository's [commands] and [worktrees] there first, or set "
                      "them in your own loopr.toml ([[repositories]] path = \"" +
                          repo + "\")");
  }
  if (!file.error.empty() || !file.settings) {
    return make_error(kRefusedCode, file.path + " cannot be trusted: " + file.error,
                      "fix the file first: a repository may set only [commands] (build, test, "
                      "validate, lint, lint_files), [worktrees] (include, setup), [validation] "
                      "protected_paths and "
                      "[[approval.rules]] that ask or deny");
  }
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  store::RepoTrust record{repo, file.hash, static_cast<std::int64_t>(now)};
  if (auto stored = store.put_repo_trust(record); !stored) return std::move(stored).error();
  return record;
}

Result<bool> untrust(store::Store& store, const std::string& repo) {
  return store.delete_repo_trust(repo);
}

}  // namespace loopr::repos
