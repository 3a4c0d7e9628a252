#include "daemon/provider_registry.hpp"

#include <spdlog/spdlog.h>

#include "llm/make_provider.hpp"

namespace loopr::daemon {

ProviderRegistry::ProviderRegistry(asio::io_context& io, const config::Settings& settings,
                                   config::EnvLookup env)
    : settings_(settings), env_(std::move(env)), io_(io) {}

ProviderRegistry::~ProviderRegistry() = default;

Result<llm::Provider*> ProviderRegistry::get(const std::string& name) {
  if (auto it = providers_.find(name); it != providers_.end()) return it->second.get();
  auto settings = settings_.providers.find(name);
  if (settings == settings_.providers.end()) {
    return make_error(errc::invalid_arguments, "no provider '" + name + "' in loopr.toml");
  }
  if (!http_) {
    try {
      http_ = std::make_unique<llm::HttpClient>(io_);
    } catch (const std::exception& e) {
      return make_error(
          errc::internal, std::string("cannot start the HTTP client: ") + e.what(),
          "check that libcurl is installed (scripts/install-deps.sh), then try again");
    }
  }
  std::vector<std::string> notes;
  auto made = llm::make_provider(settings->second, *http_, env_, &notes);
  for (const std::string& note : notes)
    spdlog::warn("provider {}: {}", name, note);
  if (!made) {
    Error error = std::move(made).error();
    error.message = "provider " + name + ": " + error.message;
    return error;
  }
  llm::Provider* provider = made->get();
  providers_.emplace(name, std::move(*made));
  return provider;
}

}  // namespace loopr::daemon
