// The effective settings of one repository (issue 25): its commands (build,
// test, validate, lint, lint_files) and what a new loop worktree of it needs
// (include, setup), each from the first place that sets it:
//   1. the user's own loopr.toml, its [[repositories]] entry for the repo;
//   2. the repository's .loopr/loopr.toml, once the user trusts it
//      (`looprctl repo trust DIR` records the file's sha256; a file changed
//      since is not honoured until trusted again);
//   3. the daemon-wide [commands] and [worktrees].
// A repository file that exists but is not honoured (not trusted, changed
// since, or invalid) is never silently skipped where it would decide
// something: refusal_for() gives the error that loop creation and the
// build/test/validate tools answer with.
//
// The file is read from the repository's checkout (the user's), never from a
// loop's worktree, which the model writes. Threads: the Store's (looprd's io
// thread).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "config/settings.hpp"
#include "repos/repo_file.hpp"
#include "store/store.hpp"

namespace loopr::repos {

// The error code of a refusal because of a repository's settings file.
inline constexpr const char* kRefusedCode = "repo_settings_refused";

enum class Source { user_config, repository_file, daemon_default };
// "user config", "repository file", "daemon default"
std::string_view to_string(Source source);

enum class FileState {
  none,       // no .loopr/loopr.toml
  trusted,    // honoured
  untrusted,  // never trusted
  changed,    // trusted, but the file's bytes changed since
  invalid,    // cannot be used (a link, too large, a disallowed key...)
};
std::string_view to_string(FileState state);

struct EffectiveRepoSettings {
  std::string repo;  // the repository's realpath (its top folder)
  config::CommandSettings commands;
  config::WorktreePrep prep;
  // The trusted file's [[approval.rules]] (ask and deny only), added to the
  // user's; empty when the file is not honoured ("approval.rules" is then
  // among unhonoured_keys if it sets any).
  std::vector<policy::CommandRule> rules;
  // [validation] protected_paths: the user's, then the trusted file's that
  // the user's do not have ("validation.protected_paths" is among
  // unhonoured_keys when the file sets some and is not honoured).
  std::vector<std::string> protected_paths;
  // Where each key's value came from, by config::kRepoSettingKeys name.
  std::map<std::string, Source> sources;
  RepoFile file;
  FileState state = FileState::none;
  std::optional<store::RepoTrust> trust;  // what the store holds
  // The file's keys that it would set (the user's config does not) but may
  // not, because it is not honoured; all of them when it is invalid.
  std::vector<std::string> unhonoured_keys;

  // The refusal when `key` ("commands.test") would come from a file that is
  // not honoured; nullopt when the key is decided.
  std::optional<Error> refusal_for(std::string_view key) const;
  // The refusal when any key the file sets is not honoured (loop creation:
  // a loop uses them all).
  std::optional<Error> refusal() const;
  // For repo.show (docs/control-protocol.md).
  nlohmann::json to_json() const;
};

// The repository `dir` belongs to: realpath, then its top folder (a
// subfolder or a linked worktree names its main repository). An error when
// `dir` is not an existing absolute folder.
Result<std::string> repository_of(const std::string& dir);

// `repo` is a repository_of() result.
Result<EffectiveRepoSettings> resolve(const config::Settings& settings, const store::Store& store,
                                      const std::string& repo);

// Trusts the repository's file as it is now (its hash); refused when there
// is no file or it cannot be used (the error says why).
Result<store::RepoTrust> trust(store::Store& store, const std::string& repo);
// Forgets the trust; false when there was none.
Result<bool> untrust(store::Store& store, const std::string& repo);

}  // namespace loopr::repos
