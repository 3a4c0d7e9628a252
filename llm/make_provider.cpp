#include "llm/make_provider.hpp"

#include <utility>

#include "llm/anthropic_wire.hpp"
#include "llm/credentials.hpp"
#include "llm/http_provider.hpp"
#include "llm/openai_wire.hpp"
#include "llm/scripted_provider.hpp"

namespace loopr::llm {

Result<std::unique_ptr<Provider>> make_provider(const config::ProviderSettings& settings,
                                                HttpClient& http, const config::EnvLookup& env,
                                                std::vector<std::string>* notes) {
  if (settings.kind == config::ProviderKind::scripted) {
    if (settings.script.empty()) {
      return make_error(loopr::errc::invalid_arguments, "the scripted provider has no script",
                        "set script to the recorded session file (JSON Lines) in loopr.toml");
    }
    auto scripted = ScriptedProvider::open(
        settings.script, ScriptedOptions{settings.stream, settings.context_window, settings.model});
    if (!scripted) return std::move(scripted).error();
    return std::unique_ptr<Provider>(std::move(*scripted));
  }

  const bool anthropic = settings.kind == config::ProviderKind::anthropic;
  if (settings.base_url.empty()) {
    return make_error(
        loopr::errc::invalid_arguments,
        std::string("the ") + (anthropic ? "anthropic" : "openai") + " provider has no base_url",
        "set base_url (http:// or https://) for this provider in loopr.toml");
  }
  auto credential = load_credential(settings, env);
  if (!credential) return std::move(credential).error();
  if (notes != nullptr && !credential->note.empty()) notes->push_back(credential->note);

  WireOptions options;
  options.base_url = settings.base_url;
  options.model = settings.model;
  options.stream = settings.stream;
  options.prompt_caching = settings.prompt_caching;
  options.max_tokens_field = settings.max_tokens_field_to_send();
  options.reasoning_effort = settings.reasoning_effort;
  std::unique_ptr<WireFormat> wire;
  if (anthropic) {
    wire = std::make_unique<AnthropicWire>(std::move(options));
  } else {
    wire = std::make_unique<OpenAiWire>(std::move(options));
  }
  HttpProviderSettings http_settings = HttpProviderSettings::from(settings);
  http_settings.context_window = settings.window();
  return std::unique_ptr<Provider>(
      std::make_unique<HttpProvider>(http, std::move(wire), std::move(*credential), http_settings));
}

}  // namespace loopr::llm
