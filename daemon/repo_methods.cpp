// The repo.* control methods (docs/control-protocol.md "Repository
// settings"): the user trusts or untrusts a repository's .loopr/loopr.toml
// and sees what each of its settings resolves to and where it came from.
// Thin handlers over repos/, which owns what trust means.
#include "daemon/methods.hpp"
#include "repos/repo_settings.hpp"

namespace loopr::daemon {
namespace {

using nlohmann::json;

// A request that cannot be done as asked (no such folder, no file to trust,
// a file that cannot be used) is -32602; a store failure stays internal.
Error as_invalid_params(Error error) {
  if (error.code == errc::io) return error;
  if (!error.details.is_object()) error.details = json::object();
  error.details["rpc_code"] = static_cast<int>(proto::ControlErrorCode::invalid_params);
  return error;
}

// params.repo, a folder, as the repository it belongs to (its top folder).
Result<std::string> repo_param(const json& params) {
  auto it = params.find("repo");
  if (!params.is_object() || it == params.end() || !it->is_string()) {
    return make_error(errc::invalid_arguments,
                      "the request needs `repo`, the absolute path of the repository's folder");
  }
  auto repo = repos::repository_of(it->get<std::string>());
  if (!repo) return as_invalid_params(std::move(repo).error());
  return repo;
}

}  // namespace

asio::awaitable<Result<json>> MethodRegistry::repo_trust(ClientSession&, json params) {
  auto repo = repo_param(params);
  if (!repo) co_return std::move(repo).error();
  auto trusted = repos::trust(services_.store, *repo);
  if (!trusted) co_return as_invalid_params(std::move(trusted).error());
  auto shown = repos::resolve(services_.settings, services_.store, *repo);
  if (!shown) co_return std::move(shown).error();
  json result = shown->to_json();
  result["trusted"] = true;
  co_return result;
}

asio::awaitable<Result<json>> MethodRegistry::repo_untrust(ClientSession&, json params) {
  auto repo = repo_param(params);
  if (!repo) co_return std::move(repo).error();
  auto removed = repos::untrust(services_.store, *repo);
  if (!removed) co_return std::move(removed).error();
  auto shown = repos::resolve(services_.settings, services_.store, *repo);
  if (!shown) co_return std::move(shown).error();
  json result = shown->to_json();
  result["untrusted"] = *removed;
  co_return result;
}

asio::awaitable<Result<json>> MethodRegistry::repo_show(ClientSession&, json params) {
  auto repo = repo_param(params);
  if (!repo) co_return std::move(repo).error();
  auto shown = repos::resolve(services_.settings, services_.store, *repo);
  if (!shown) co_return std::move(shown).error();
  co_return shown->to_json();
}

void MethodRegistry::add_repo_methods() {
  add<proto::methods::RepoTrust>([this](ClientSession& session, proto::UntypedParams params) {
    return repo_trust(session, std::move(params));
  });
  add<proto::methods::RepoUntrust>([this](ClientSession& session, proto::UntypedParams params) {
    return repo_untrust(session, std::move(params));
  });
  add<proto::methods::RepoShow>([this](ClientSession& session, proto::UntypedParams params) {
    return repo_show(session, std::move(params));
  });
}

}  // namespace loopr::daemon
