// html_to_text: the Markdown and plain text web_fetch makes of a page.
#include "loopr-fetch/html_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace loopr::fetch {
namespace {

const std::string kBase = "https://example.com/docs/page.html";

std::string markdown(const std::string& html) {
  return html_to_text(html, "utf-8", TextStyle::markdown, kBase).text;
}

std::string plain(const std::string& html) {
  return html_to_text(html, "utf-8", TextStyle::text, kBase).text;
}

TEST(HtmlText, HeadingsParagraphsAndEmphasisBecomeMarkdown) {
  const std::string html =
      "<html><head><title> The  Page </title><style>p{color:red}</style>"
      "<script>alert(1)</script></head><body><h1>Main   title</h1>"
      "<p>Some <b>bold</b> and <em>slanted</em>\n   text.</p><h2>Next</h2><p>More.</p>"
      "</body></html>";
  const PageText page = html_to_text(html, "", TextStyle::markdown, kBase);
  EXPECT_EQ(page.title, "The Page");
  EXPECT_EQ(page.text, "# Main title\n\nSome **bold** and *slanted* text.\n\n## Next\n\nMore.");
  EXPECT_EQ(plain(html), "Main title\n\nSome bold and slanted text.\n\nNext\n\nMore.");
}

TEST(HtmlText, LinksAndImagesAreResolvedAgainstThePage) {
  const std::string md = markdown(
      "<p>See <a href=\"../api/x.html#y\">the API</a>, <a href=\"https://other.org/\">other</a>"
      " and <a href=\"javascript:void(0)\">a script</a>.<img src=\"/logo.png\" alt=\"Logo\"></p>");
  EXPECT_EQ(md,
            "See [the API](https://example.com/api/x.html#y), [other](https://other.org/) and a "
            "script.![Logo](https://example.com/logo.png)");
  EXPECT_EQ(plain("<p>See <a href=\"/x\">the API</a>.</p>"), "See the API.");
}

TEST(HtmlText, ListsNestAndNumber) {
  const std::string md = markdown(
      "<ul><li>one</li><li>two<ol><li>first</li><li>second</li></ol></li></ul><p>after</p>");
  EXPECT_EQ(md, "- one\n- two\n\n  1. first\n  2. second\n\nafter");
}

TEST(HtmlText, PreformattedTextKeepsItsSpacing) {
  const std::string md = markdown("<p>Run:</p><pre><code>make  -j2\n  ./test</code></pre><p>x</p>");
  EXPECT_EQ(md, "Run:\n\n```\nmake  -j2\n  ./test\n```\n\nx");
  EXPECT_EQ(markdown("<p>call <code>f(x)</code> now</p>"), "call `f(x)` now");
}

TEST(HtmlText, TablesBecomePipeTables) {
  const std::string md =
      markdown("<table><tr><th>Name</th><th>Size</th></tr><tr><td>a</td><td>1</td></tr></table>");
  EXPECT_EQ(md, "| Name | Size |\n| --- | --- |\n| a | 1 |");
}

TEST(HtmlText, FormsScriptsAndHiddenPartsAreDropped) {
  const std::string md = markdown(
      "<body><noscript>enable js</noscript><form><input value=\"v\"><button>Go</button>"
      "<textarea>typed</textarea>Label</form><template><p>t</p></template><p>kept</p></body>");
  EXPECT_EQ(md, "Label\n\nkept");
}

TEST(HtmlText, EntitiesAndDeclaredCharsetsDecode) {
  EXPECT_EQ(markdown("<p>caf&eacute; &amp; &lt;tags&gt; &#x1F600;</p>"),
            "caf\xC3\xA9 & <tags> \xF0\x9F\x98\x80");
  // ISO-8859-1 bytes, declared by the header's charset.
  EXPECT_EQ(html_to_text("<p>caf\xE9</p>", "ISO-8859-1", TextStyle::text, kBase).text,
            "caf\xC3\xA9");
}

TEST(HtmlText, BrokenMarkupStillGivesItsText) {
  EXPECT_EQ(plain("<p>open <b>bold <i>both</p><p>next"), "open bold both\n\nnext");
  EXPECT_EQ(plain(""), "");
  EXPECT_EQ(plain("just text"), "just text");
}

// libxml2 stops building the tree 256 elements deep (its guard against
// exactly this); what came before is kept and nothing overflows.
TEST(HtmlText, HostileNestingDepthDoesNotExhaustTheStack) {
  std::string html = "<p>before</p>";
  for (int i = 0; i < 200000; ++i)
    html += "<div><span>";
  html += "deep";
  const std::string text = plain(html);
  EXPECT_TRUE(text.starts_with("before")) << text.substr(0, 100);
  EXPECT_LT(text.size(), 1000u);
}

}  // namespace
}  // namespace loopr::fetch
