// The repo.* control methods (docs/control-protocol.md "Repository
// settings"): the user trusts or untrusts a repository's .loopr/loopr.toml
// and sees what each of its settings resolves to and where it came from.
// Thin handlers over repos/, which owns what trust means; the params are
// read by proto/memory_messages.hpp.
#include "daemon/methods.hpp"
#include "repos/repo_settings.hpp"

namespace loopr::daemon {
namespace {

using nlohmann::json;

// The folder as the repository it belongs to (its top folder).
Result<std::string> repository_of(const proto::RepoParams& params) {
  auto repo = repos::repository_of(params.repo);
  if (!repo) return as_invalid_params(std::move(repo).error());
  return repo;
}

}  // namespace

Result<proto::Document> MethodRegistry::repo_trust(const proto::RepoParams& params) {
  auto repo = repository_of(params);
  if (!repo) return std::move(repo).error();
  auto trusted = repos::trust(services_.store, *repo);
  if (!trusted) return as_invalid_params(std::move(trusted).error());
  auto shown = repos::resolve(services_.settings, services_.store, *repo);
  if (!shown) return std::move(shown).error();
  json result = shown->to_json();
  result["trusted"] = true;
  return result;
}

Result<proto::Document> MethodRegistry::repo_untrust(const proto::RepoParams& params) {
  auto repo = repository_of(params);
  if (!repo) return std::move(repo).error();
  auto removed = repos::untrust(services_.store, *repo);
  if (!removed) return std::move(removed).error();
  auto shown = repos::resolve(services_.settings, services_.store, *repo);
  if (!shown) return std::move(shown).error();
  json result = shown->to_json();
  result["untrusted"] = *removed;
  return result;
}

Result<proto::Document> MethodRegistry::repo_show(const proto::RepoParams& params) {
  auto repo = repository_of(params);
  if (!repo) return std::move(repo).error();
  auto shown = repos::resolve(services_.settings, services_.store, *repo);
  if (!shown) return std::move(shown).error();
  return shown->to_json();
}

void MethodRegistry::add_repo_methods() {
  namespace methods = proto::methods;
  add<methods::RepoTrust>(
      [this](ClientSession&, const proto::RepoParams& params) { return repo_trust(params); });
  add<methods::RepoUntrust>(
      [this](ClientSession&, const proto::RepoParams& params) { return repo_untrust(params); });
  add<methods::RepoShow>(
      [this](ClientSession&, const proto::RepoParams& params) { return repo_show(params); });
}

}  // namespace loopr::daemon
