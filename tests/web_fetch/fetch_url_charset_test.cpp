// checked_fetch_url, resolve_http_url and the charset helpers of web_fetch.
#include <gtest/gtest.h>

#include "loopr-fetch/charset.hpp"
#include "loopr-fetch/fetch_url.hpp"

namespace loopr::fetch {
namespace {

TEST(FetchUrl, HttpAndHttpsUrlsAreAcceptedAndNormalized) {
  EXPECT_EQ(checked_fetch_url("https://example.com").value(), "https://example.com/");
  EXPECT_EQ(checked_fetch_url("HTTP://Example.COM/a?b=1").value(), "http://Example.COM/a?b=1");
}

TEST(FetchUrl, OtherSchemesAndNonUrlsAreRefusedWithWhatToSend) {
  for (const char* url : {"file:///etc/passwd", "ftp://example.com/x", "gopher://example.com/",
                          "dict://example.com/", "example.com/page", "/etc/passwd", "", "http://",
                          "javascript:alert(1)", "data:text/html,hi"}) {
    const auto checked = checked_fetch_url(url);
    ASSERT_FALSE(checked) << url;
    EXPECT_EQ(checked.error().code, errc::invalid_arguments) << url;
    EXPECT_FALSE(checked.error().hint.empty()) << url;
  }
  EXPECT_FALSE(checked_fetch_url("https://example.com/" + std::string(kMaxUrlBytes, 'a')));
}

TEST(FetchUrl, ReferencesResolveAgainstTheirPage) {
  const std::string base = "https://example.com/a/b.html";
  EXPECT_EQ(resolve_http_url(base, "c.html"), "https://example.com/a/c.html");
  EXPECT_EQ(resolve_http_url(base, "/root"), "https://example.com/root");
  EXPECT_EQ(resolve_http_url(base, "//cdn.example.org/x"), "https://cdn.example.org/x");
  EXPECT_EQ(resolve_http_url(base, "#top"), "https://example.com/a/b.html#top");
  EXPECT_EQ(resolve_http_url(base + "#old", "#new"), "https://example.com/a/b.html#new");
  EXPECT_EQ(resolve_http_url(base, "mailto:someone@example.com"), "");
  EXPECT_EQ(resolve_http_url(base, "javascript:void(0)"), "");
}

TEST(Charset, ContentTypeParametersAreRead) {
  EXPECT_EQ(charset_of("text/html; charset=ISO-8859-1"), "ISO-8859-1");
  EXPECT_EQ(charset_of("text/html;Charset=\"utf-8\""), "utf-8");
  EXPECT_EQ(charset_of("text/html; q=1; charset=koi8-r "), "koi8-r");
  EXPECT_EQ(charset_of("text/html"), "");
  EXPECT_EQ(media_type_of(" Text/HTML ; charset=x"), "text/html");
  EXPECT_EQ(media_type_of(""), "");
}

TEST(Charset, BytesDecodeToUtf8AndBadOnesBecomeReplacements) {
  EXPECT_EQ(decode_to_utf8("caf\xE9", "iso-8859-1"), "caf\xC3\xA9");
  EXPECT_EQ(decode_to_utf8("\xC1\xD2\xC9\xD1", "koi8-r"), "\xD0\xB0\xD1\x80\xD0\xB8\xD1\x8F");
  EXPECT_EQ(decode_to_utf8("ok\xFF", "utf-8"), "ok\xEF\xBF\xBD");
  EXPECT_EQ(decode_to_utf8("ok\xFF", "no-such-charset"), "ok\xEF\xBF\xBD");
  // Shift_JIS with a cut multi-byte sequence at the end.
  EXPECT_EQ(decode_to_utf8("a\x82", "shift_jis"), "a\xEF\xBF\xBD");
}

}  // namespace
}  // namespace loopr::fetch
