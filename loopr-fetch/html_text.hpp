// HTML to Markdown or plain text, for web_fetch: the words, headings, lists,
// links, code and tables a model needs, without scripts, styles, forms or
// markup. Parsed with libxml2's HTML parser (tolerant of broken markup, no
// network access, entities decoded, the page's declared charset honoured);
// the tree is walked without recursion, so a hostile nesting depth costs
// heap, not stack. Pure; thread-safe (libxml2 is initialised once).
#pragma once

#include <string>
#include <string_view>

namespace loopr::fetch {

enum class TextStyle { markdown, text };

struct PageText {
  std::string title;  // <title>, whitespace collapsed; may be empty
  std::string text;   // UTF-8
};

// `charset` comes from the Content-Type header (may be empty: the page's
// <meta> or libxml2's detection decides). Links and images are resolved
// against `base_url`.
PageText html_to_text(std::string_view html, std::string_view charset, TextStyle style,
                      const std::string& base_url);

}  // namespace loopr::fetch
