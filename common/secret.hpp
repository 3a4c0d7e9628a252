// Secret: a key (an API key for a model or a search provider) that prints as
// "[secret]", so that a log line, a test failure or an Error cannot show it by
// accident; only the HTTP layer calls reveal() to build its headers. And
// redact(), which takes the key out of anything a server sends back.
// Threads: thread-compatible.
#pragma once

#include <iosfwd>
#include <string>

namespace loopr {

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

// `text` with every occurrence of the key replaced by "[redacted]"; for
// anything a server sends back, which might echo the key. A null or empty
// key changes nothing.
std::string redact(std::string text, const Secret* key);

}  // namespace loopr
