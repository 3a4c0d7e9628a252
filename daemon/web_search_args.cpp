#include "daemon/web_search_args.hpp"

#include <spdlog/spdlog.h>

#include <string>

#include "llm/credentials.hpp"

namespace loopr::daemon {

using nlohmann::json;

Result<void> add_web_search_provider(json& args, const config::WebSearchSettings& settings,
                                     const config::EnvLookup& env, std::uint64_t timeout_ms) {
  args.erase("search_provider");
  args["allowed_networks"] = settings.allowed_networks;
  const std::string& kind = settings.provider;
  auto found = settings.providers.find(kind);
  if (kind.empty() || found == settings.providers.end()) {
    return make_error("not_configured",
                      "web_search: no search provider is configured in loopr.toml",
                      "ask the user to set [web_search] provider = \"brave\", \"google\", "
                      "\"serper\" or \"searxng\" in loopr.toml, with that provider's key in "
                      "the environment variable [web_search.<provider>] api_key_env names "
                      "(or key_file), and for google [web_search.google] cx, for searxng "
                      "[web_search.searxng] base_url");
  }
  const config::SearchProviderSettings& provider = found->second;
  const std::string table = "[web_search." + kind + "]";
  if (provider.base_url.empty()) {
    return make_error(errc::invalid_arguments,
                      "web_search: " + table + " base_url is not set in loopr.toml",
                      "ask the user to set " + table + " base_url to the instance's address");
  }
  if (kind == "google" && provider.cx.empty()) {
    return make_error(errc::invalid_arguments,
                      "web_search: [web_search.google] cx is not set in loopr.toml",
                      "ask the user to set [web_search.google] cx to the id of their "
                      "Programmable Search Engine");
  }
  json fields = {{"kind", kind},
                 {"base_url", provider.base_url},
                 {"max_retries", settings.max_retries},
                 {"retry_base_delay_ms", settings.retry_base_delay_ms},
                 {"retry_max_delay_ms", settings.retry_max_delay_ms},
                 {"timeout_ms", timeout_ms}};
  if (kind == "google") fields["cx"] = provider.cx;
  if (kind != "searxng") {
    if (provider.api_key_env.empty() && provider.key_file.empty()) {
      return make_error("provider_auth", "web_search: no key is configured for " + kind,
                        "ask the user to set " + table + " api_key_env or key_file in loopr.toml");
    }
    auto credential = llm::load_credential(provider.api_key_env, provider.key_file, env);
    if (!credential) {
      Error error = std::move(credential).error();
      error.message = "web_search (" + kind + "): " + error.message;
      error.hint = "ask the user: " + error.hint;
      return error;
    }
    if (!credential->key) {
      return make_error("provider_auth", "web_search: no key found for " + kind,
                        "ask the user to set " + table + " api_key_env or key_file in loopr.toml");
    }
    if (!credential->note.empty()) spdlog::warn("web_search: {}", credential->note);
    fields["api_key"] = credential->key->reveal();
  }
  args["search_provider"] = std::move(fields);
  return {};
}

}  // namespace loopr::daemon
