// ProviderRegistry: the LLM providers of loopr.toml's [providers.*], built
// on first use (make_provider reads the key then, so a missing key fails the
// loop that needs it, with what to set, not the daemon's start) and kept for
// the daemon's life. Owns the HttpClient they share, made with the first
// provider: libcurl's start-up maps and touches its TLS libraries (about
// 5 MB resident), which a daemon that only routes tool calls never needs.
// Threads: io thread only.
#pragma once

#include <asio/io_context.hpp>
#include <map>
#include <memory>
#include <string>

#include "common/error.hpp"
#include "config/environment.hpp"
#include "config/settings.hpp"
#include "llm/http_client.hpp"
#include "llm/provider.hpp"

namespace loopr::daemon {

class ProviderRegistry {
 public:
  ProviderRegistry(asio::io_context& io, const config::Settings& settings, config::EnvLookup env);
  ~ProviderRegistry();

  Result<llm::Provider*> get(const std::string& name);

 private:
  const config::Settings& settings_;
  config::EnvLookup env_;
  asio::io_context& io_;
  std::unique_ptr<llm::HttpClient> http_;  // made by the first get()
  std::map<std::string, std::unique_ptr<llm::Provider>> providers_;
};

}  // namespace loopr::daemon
