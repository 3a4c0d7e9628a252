// API keys for the HTTP providers (DESIGN.md §8): from the environment
// variable a provider names (api_key_env), else from its key file
// (key_file). A key lives in a Secret, which prints as "[secret]" so that a
// log line, a test failure or an Error cannot show it by accident; only the
// HTTP layer calls reveal() to build its headers.
// Threads: thread-compatible.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "config/environment.hpp"
#include "config/settings.hpp"

namespace loopr::llm {

class Secret {
 public:
  explicit Secret(std::string value) : value_(std::move(value)) {}
  // The key's text: for the request header, and for redacting it from
  // anything a server sends back. Never for a message or a log.
  const std::string& reveal() const { return value_; }
  bool empty() const { return value_.empty(); }

  friend std::ostream& operator<<(std::ostream& out, const Secret& secret);
  // GoogleTest's printer.
  friend void PrintTo(const Secret& secret, std::ostream* out);

 private:
  std::string value_;
};

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

// `text` with every occurrence of the key replaced by "[redacted]"; for
// anything a server sends back, which might echo the key.
std::string redact(std::string text, const Secret* key);

}  // namespace loopr::llm
