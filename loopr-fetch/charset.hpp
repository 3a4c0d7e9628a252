// Text in a web page's declared charset, as UTF-8. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace loopr::fetch {

// The charset parameter of a Content-Type value ("text/html; charset=ISO-8859-1"
// -> "ISO-8859-1"), unquoted; empty when there is none.
std::string charset_of(std::string_view content_type);

// The media type of a Content-Type value, lower-cased, without parameters
// ("Text/HTML; charset=x" -> "text/html").
std::string media_type_of(std::string_view content_type);

// `bytes` decoded from `charset` (any name iconv knows) to UTF-8. An empty,
// UTF-8 or ASCII charset, or one iconv does not know, is read as UTF-8; bytes
// that do not decode become U+FFFD. Never fails.
std::string decode_to_utf8(std::string_view bytes, std::string_view charset);

}  // namespace loopr::fetch
