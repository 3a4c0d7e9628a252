// make_provider: the Provider a [providers.NAME] table of loopr.toml
// describes (DESIGN.md §8): kind "anthropic" or "openai" → HttpProvider with
// that wire format and the key from api_key_env / key_file; "scripted" →
// ScriptedProvider replaying `script`. context_window 0 becomes the kind's
// default (ProviderSettings::window(): Anthropic 200000, OpenAI-compatible
// 128000, scripted 200000). An openai provider's WireOptions carry
// max_tokens_field_to_send() and reasoning_effort.
//
// Errors: a missing or unreadable key (provider_auth), a missing base_url
// (invalid_arguments), a bad scripted session (invalid_arguments/io naming
// FILE:LINE). They are returned, not thrown: looprd's start-up turns them into
// its ConfigError/StartupError. Messages never contain key text.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/environment.hpp"
#include "config/settings.hpp"
#include "llm/http_client.hpp"
#include "llm/provider.hpp"

namespace loopr::llm {

// `notes`, when given, receives things worth a warn log line (a key file
// other users can read); they never hold key text. `http` must outlive the
// provider.
Result<std::unique_ptr<Provider>> make_provider(const config::ProviderSettings& settings,
                                                HttpClient& http, const config::EnvLookup& env,
                                                std::vector<std::string>* notes = nullptr);

}  // namespace loopr::llm
