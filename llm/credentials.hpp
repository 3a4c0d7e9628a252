// API keys for the HTTP providers (DESIGN.md §8): from the environment
// variable a provider names (api_key_env), else from its key file
// (key_file). A key lives in a Secret (common/secret.hpp), which prints as
// "[secret]"; only the HTTP layer calls reveal() to build its headers.
// Threads: thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "common/secret.hpp"
#include "config/environment.hpp"
#include "config/settings.hpp"

namespace loopr::llm {

struct Credential {
  std::optional<Secret> key;  // none when the provider names no variable and no file
  // Where the key came from, for messages: "environment variable
  // ANTHROPIC_API_KEY", "key file /home/u/.config/loopr/key"; "no key" when none.
  std::string source;
  // Worth logging at warn when not empty (a key file others can read); never
  // holds key text.
  std::string note;
};

// The key for `settings`: its api_key_env variable when set and not empty,
// else its key_file (one trailing newline stripped). Neither configured: a
// Credential without a key (local servers need none). Errors (code
// provider_auth) name the variable or the file and say what to set; they
// never contain key text. A key file that is unreadable, empty or holds more
// than one line is refused.
Result<Credential> load_credential(const config::ProviderSettings& settings,
                                   const config::EnvLookup& env);
// The same rules for any key that names its variable and its file (the web
// search providers of [web_search.*]).
Result<Credential> load_credential(const std::string& api_key_env, const std::string& key_file,
                                   const config::EnvLookup& env);

}  // namespace loopr::llm
